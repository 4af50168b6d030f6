"""Metrics from records: the same definitions for simulated and measured runs.

Definitions (per request, then aggregated; keys follow `vllm bench serve`):

- TTFT (`ttft_ms`): first output token time - arrival (send) time. AIPerf: "Time to First
  Token"; guidellm: `time_to_first_token_ms`.
- TPOT (`tpot_ms`): (E2E - TTFT) / (output tokens - 1), per request, only for requests with
  at least 2 output tokens. AIPerf calls this "Inter Token Latency"; guidellm calls it
  `inter_token_latency_ms`. The course's "ITL" slide means this quantity.
- ITL (`itl_ms`): every gap between consecutive output tokens of a request, pooled over all
  requests (vLLM's ITL). Its mean is weighted by tokens, TPOT's by requests.
- E2E latency (`e2el_ms`): finish (last token) - arrival. AIPerf "Request Latency".
- NTPOT (`ntpot_ms`): E2E / output tokens, the normalised latency per output token.
- Queueing time (`queue_ms`): first scheduled - arrival (simulator only; the client can't see it).
- Throughputs divide by the run's duration: the first arrival to the last finish, unless given.
  `request_throughput` (req/s), `output_throughput` (output tok/s), `total_token_throughput`
  (prompt + output tok/s), each also `..._per_gpu` and `..._per_instance`.
- Goodput (`request_goodput`): requests/s that met every given SLO (vLLM `--goodput`).

Failed requests (an `error`) count in `failed` and are left out of every latency metric.

Cost. A list of records costs O(tokens): every gap of every request is pooled. A simulated
run's `RecordTable` costs O(steps + requests): its token times are spans of one buffer (the
engine's step end times), so the pooled ITL sample is the buffer's consecutive differences,
each counted once per request whose span covers it (a difference array over span ends).
Percentiles and the median of that weighted sample are the ones `numpy.percentile` and
`numpy.median` give on the pooled sample, bit for bit (same order statistics, same linear
interpolation); its mean and std are sums in another order, within a relative 1e-12 of the
pooled ones. A held first token (`first_token_delay_s`) adds a gap of its own per request
and zeros for the tokens it holds back (`_table_itl`). A `ChunkTable`'s spans are chunks of
tokens: the same, plus a zero gap for each token beyond the first of a chunk.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from llmsizer.records import ChunkTable, RecordTable, RequestRecord

DEFAULT_PERCENTILES: tuple[float, ...] = (50.0, 90.0, 95.0, 99.0)
LATENCY_METRICS = ("ttft", "tpot", "itl", "e2el", "ntpot", "queue")


@dataclass(frozen=True, slots=True)
class Slo:
    """Latency limits in seconds that a request must all meet to count as good (None: no limit)."""

    ttft_s: float | None = None
    tpot_s: float | None = None
    e2el_s: float | None = None

    def met_by(self, r: RequestRecord) -> bool:
        checks = ((self.ttft_s, r.ttft_s), (self.tpot_s, r.tpot_s), (self.e2el_s, r.e2el_s))
        return all(lim is None or (v is not None and v <= lim) for lim, v in checks)


def percentile_key(p: float) -> str:
    """vLLM's key fragment for a percentile: 99 -> 'p99', 99.9 -> 'p99.9'."""
    return f"p{p:g}"


# `median` and `percentiles_of` are numpy's, bit for bit, on a 1-D sample, without numpy's own
# functions: `np.median`'s NaN check and `np.percentile`'s `np.unique` import `numpy.ma`,
# 40-85 ms of a one-case `llmsizer predict` (issue 13, startup).


def median(values: np.ndarray) -> float:
    """`numpy.median`: the middle order statistic, or the mean of the two, `(a + b) / 2` as
    `numpy.mean` sums and divides them; NaN if any value is."""
    return _median_and_percentiles(values, (), True)[0]


def percentiles_of(values: np.ndarray, ps: Sequence[float]) -> list[float]:
    """`numpy.percentile(values, ps)` (method 'linear'): one partition at every order
    statistic needed, then numpy's interpolation (`_linear`); NaNs if any value is."""
    return _median_and_percentiles(values, ps, False)[1]


def _median_and_percentiles(
    values: np.ndarray, ps: Sequence[float], with_median: bool
) -> tuple[float, list[float]]:
    """`median` (NaN unless `with_median`) and `percentiles_of`, from one partition of the
    sample at every order statistic they read (a summary partitions a million ITL gaps
    once, not twice). The median reads two even for an odd n: numpy's introselect for one
    kth took 15x as long on a sample with a large block of equal values (a speculating
    run's pooled ITL, 60 % zero gaps inside streamed chunks: 80-130 ms against 3-7 ms)."""
    n = values.shape[0]
    if n == 0 or np.isnan(values).any():
        return math.nan, [math.nan] * len(ps)
    k = n // 2
    below = [min(math.floor((n - 1) * (p / 100)), n - 1) for p in ps]
    kth = {*below, *(min(b + 1, n - 1) for b in below)}
    if with_median:
        kth |= {max(k - 1, 0), k}
    if not kth:
        return math.nan, []
    part = np.partition(values, sorted(kth))
    mid = math.nan
    if with_median:
        mid = float(part[k]) if n % 2 else float((part[k - 1] + part[k]) / 2)
    return mid, [_linear(n, p, lambda j: float(part[j])) for p in ps]


def _linear(n: int, p: float, order_statistic: Callable[[int], float]) -> float:
    """The `p`-th percentile of `n` values by numpy's rule: the virtual index (n - 1) p / 100,
    then `numpy.lib._function_base_impl._lerp`'s two forms around gamma 0.5."""
    virtual = (n - 1) * (p / 100)
    if virtual >= n - 1:
        return order_statistic(n - 1)
    below = math.floor(virtual)
    gamma = virtual - below
    a, b = order_statistic(below), order_statistic(below + 1)
    diff = b - a
    if gamma >= 0.5:
        return b - diff * (1 - gamma)
    return a + diff * gamma


@dataclass(frozen=True, slots=True)
class WeightedSample:
    """A pooled sample stored as ascending values and how often each occurs."""

    values: np.ndarray  # ascending
    counts: np.ndarray  # int64, each > 0
    cumulative: np.ndarray  # running sum of counts: values[j] holds ranks cum[j-1] .. cum[j]-1

    @classmethod
    def of(cls, values: np.ndarray, counts: np.ndarray) -> WeightedSample:
        # ties are equal values: their order cannot matter. Stable (timsort): pooled step
        # gaps come in ascending runs (a batch's steps lengthen as its context grows),
        # which it sorts 4-8x faster than the default quicksort (issue 13)
        order = np.argsort(values, kind="stable")
        counts = counts[order]
        return cls(values[order], counts, np.cumsum(counts))

    @property
    def size(self) -> int:
        return int(self.cumulative[-1]) if self.cumulative.size else 0

    def scaled(self, factor: float) -> WeightedSample:
        return WeightedSample(self.values * factor, self.counts, self.cumulative)

    def order_statistic(self, k: int) -> float:
        """The k-th smallest (0-based) value of the pooled sample."""
        return float(self.values[int(np.searchsorted(self.cumulative, k, side="right"))])

    def mean(self) -> float:
        return float((self.values * self.counts).sum() / self.size)

    def std(self) -> float:
        d = self.values - self.mean()
        return float(math.sqrt((d * d * self.counts).sum() / self.size))

    def median(self) -> float:
        """`numpy.median` of the pooled sample: the middle value, or the mean of the two."""
        n = self.size
        if n % 2:
            return self.order_statistic((n - 1) // 2)
        return (self.order_statistic(n // 2 - 1) + self.order_statistic(n // 2)) / 2

    def percentile(self, p: float) -> float:
        """`numpy.percentile(pooled, p)` (method 'linear'), with numpy's own rounding steps."""
        return _linear(self.size, p, self.order_statistic)


def _itl_pooled(ok: Sequence[RequestRecord]) -> np.ndarray:
    """Every record's consecutive gaps, record after record: the differences of all their
    times in one array, less those across two records (a diff per record cost 10-16 ms
    over a speculating probe's 2,700 records; the same values in the same order)."""
    spans = [r.token_times_s for r in ok if r.num_output_tokens > 1]
    if not spans:
        return np.zeros(0)
    ends = np.cumsum([s.shape[0] for s in spans])
    return np.delete(np.diff(np.concatenate(spans)), ends[:-1] - 1)


def _latency_arrays(ok: Sequence[RequestRecord]) -> dict[str, np.ndarray | WeightedSample]:
    n = len(ok)
    first = np.fromiter((r.token_times_s[0] for r in ok), dtype=np.float64, count=n)
    last = np.fromiter((r.token_times_s[-1] for r in ok), dtype=np.float64, count=n)
    arrival = np.fromiter((r.arrival_s for r in ok), dtype=np.float64, count=n)
    finish = np.fromiter(
        (r.finish_s if r.finish_s is not None else r.token_times_s[-1] for r in ok),
        dtype=np.float64,
        count=n,
    )
    n_out = np.fromiter((r.num_output_tokens for r in ok), dtype=np.float64, count=n)
    sched = [r.scheduled_s for r in ok]
    multi = n_out > 1
    out: dict[str, np.ndarray | WeightedSample] = {
        "ttft": first - arrival,
        "tpot": (last[multi] - first[multi]) / (n_out[multi] - 1),
        "itl": _itl_pooled(ok),
        "e2el": finish - arrival,
        "ntpot": (finish - arrival) / n_out,
    }
    if all(s is not None for s in sched):
        out["queue"] = np.asarray(sched, dtype=np.float64) - arrival
    return out


def summarize(
    records: Sequence[RequestRecord],
    *,
    num_gpus: int = 1,
    num_instances: int = 1,
    slo: Slo | None = None,
    percentiles: Sequence[float] = DEFAULT_PERCENTILES,
    duration_s: float | None = None,
) -> dict[str, float]:
    """vLLM-style summary of a run. Latencies in ms, throughputs per second.

    Keys: `completed`, `failed`, `duration_s`, `total_input_tokens`, `total_output_tokens`,
    `request_throughput`, `output_throughput`, `total_token_throughput` (and `_per_gpu`,
    `_per_instance` variants), `request_goodput` when an SLO is given, and for each latency
    metric `mean_<m>_ms`, `median_<m>_ms`, `std_<m>_ms`, `p<P>_<m>_ms`.
    """
    if isinstance(records, RecordTable):
        return _summary(
            _table_facts(records, slo), num_gpus, num_instances, percentiles, duration_s
        )
    return _summary(_list_facts(records, slo), num_gpus, num_instances, percentiles, duration_s)


@dataclass(frozen=True, slots=True)
class _Facts:
    """What a summary needs from a run, however its records are stored."""

    num_records: int
    num_ok: int
    start_s: float  # first arrival
    end_s: float  # last finish (or arrival, for a record that never finished)
    num_input_tokens: int
    num_output_tokens: int
    num_good: int | None  # requests that met the SLO, when one was given
    latencies: dict[str, np.ndarray | WeightedSample]  # seconds, over the successful requests


def _list_facts(records: Sequence[RequestRecord], slo: Slo | None) -> _Facts:
    ok = [r for r in records if r.ok]
    return _Facts(
        num_records=len(records),
        num_ok=len(ok),
        start_s=min((r.arrival_s for r in records), default=0.0),
        end_s=max(
            ((r.finish_s if r.finish_s is not None else r.arrival_s) for r in records),
            default=0.0,
        ),
        num_input_tokens=sum(r.num_prompt_tokens for r in ok),
        num_output_tokens=sum(r.num_output_tokens for r in ok),
        num_good=None if slo is None else sum(1 for r in ok if slo.met_by(r)),
        latencies=_latency_arrays(ok) if ok else {},
    )


def _table_facts(t: RecordTable, slo: Slo | None) -> _Facts:
    n = len(t)
    first, last, arrival, finish = t.first_token_s(), t.last_token_s(), t.arrival_s, t.finish_s
    tokens = t.num_tokens if isinstance(t, ChunkTable) else t.num_output_tokens
    n_out = tokens.astype(np.float64)
    multi = t.num_output_tokens > 1  # (more than one chunk exactly when more than one token)
    latencies: dict[str, np.ndarray | WeightedSample] = {}
    if n:
        latencies = {
            "ttft": first - arrival,
            "tpot": (last[multi] - first[multi]) / (n_out[multi] - 1),
            "itl": _table_itl(t, multi),
            "e2el": finish - arrival,
            "ntpot": (finish - arrival) / n_out,
            "queue": t.scheduled_s - arrival,
        }
    good = None
    if slo is not None:
        met = np.ones(n, dtype=bool)
        if slo.ttft_s is not None:
            met &= first - arrival <= slo.ttft_s
        if slo.tpot_s is not None:
            tpot = np.full(n, np.inf)
            tpot[multi] = (last[multi] - first[multi]) / (n_out[multi] - 1)
            met &= multi & (tpot <= slo.tpot_s)
        if slo.e2el_s is not None:
            met &= finish - arrival <= slo.e2el_s
        good = int(met.sum())
    return _Facts(
        num_records=n,
        num_ok=n,
        start_s=float(arrival.min()) if n else 0.0,
        end_s=float(finish.max()) if n else 0.0,
        num_input_tokens=int(t.num_prompt_tokens.sum()),
        num_output_tokens=int(tokens.sum()),
        num_good=good,
        latencies=latencies,
    )


def _table_itl(t: RecordTable, multi: np.ndarray) -> WeightedSample:
    """The pooled ITL gaps (seconds) of a table: per step, not per token (module doc).

    Request i's gaps are diff(buffer)[start_i : start_i + n_i - 1]; the number of requests
    covering each difference is a running sum of +1 at span starts and -1 at span ends.

    A first token held until h = t_0 + D (`first_token_delay_s`) changes only the gaps up to
    the first token made after h, the m-th (m tokens are made by h):

        client times  h, h, ..., h (m of them), t_m, t_m+1, ...
        gaps          0 (m - 1 of them), t_m - h, then diff(buffer) from start + m on

    so those are counted apart and the span covered starts m tokens later.
    """
    buffer = t.token_buffer
    size = buffer.shape[0]
    start = t.token_start[multi]
    num = t.num_output_tokens[multi]
    stop = start + num - 1  # one past the last difference of the span
    values = [np.diff(buffer)]
    counts: list[np.ndarray] = []
    if t.first_token_delay_s > 0:
        hold = buffer[start] + t.first_token_delay_s  # as `hold_first_token` computes it
        made = _num_at_or_before(buffer, start, num, hold)
        late = made < num
        values += [np.zeros(1), buffer[start[late] + made[late]] - hold[late]]
        counts += [np.array([int((made - 1).sum())]), np.ones(int(late.sum()), dtype=np.int64)]
        start = start + made
        spans = start < stop
        start, stop = start[spans], stop[spans]
    if isinstance(t, ChunkTable):  # the zero gaps inside chunks
        values, counts = [*values, np.zeros(1)], [*counts, np.array([t.num_zero_gaps()])]
    cover = np.cumsum(np.bincount(start, minlength=size) - np.bincount(stop, minlength=size))
    counts.insert(0, cover[: size - 1])
    value, count = np.concatenate(values), np.concatenate(counts)
    used = count > 0
    return WeightedSample.of(value[used], count[used])


def _num_at_or_before(
    buffer: np.ndarray, start: np.ndarray, num: np.ndarray, t: np.ndarray
) -> np.ndarray:
    """Per span (ascending times `buffer[start : start + num]`), how many are <= its `t`:
    bisection on every span at once (log2 of the longest span rounds)."""
    lo, hi = np.zeros_like(num), num.copy()
    while (active := lo < hi).any():
        mid = (lo + hi) // 2
        at_or_before = buffer[start + np.minimum(mid, num - 1)] <= t
        lo = np.where(active & at_or_before, mid + 1, lo)
        hi = np.where(active & ~at_or_before, mid, hi)
    return lo


def _summary(
    f: _Facts,
    num_gpus: int,
    num_instances: int,
    percentiles: Sequence[float],
    duration_s: float | None,
) -> dict[str, float]:
    out: dict[str, float] = {"completed": f.num_ok, "failed": f.num_records - f.num_ok}
    if not f.num_records:
        return out
    if duration_s is None:
        duration_s = f.end_s - f.start_s
    out["duration_s"] = duration_s
    in_tok, out_tok = f.num_input_tokens, f.num_output_tokens
    out["total_input_tokens"] = in_tok
    out["total_output_tokens"] = out_tok
    rate = 1.0 / duration_s if duration_s > 0 else float("nan")
    for key, value in (
        ("request_throughput", f.num_ok * rate),
        ("output_throughput", out_tok * rate),
        ("total_token_throughput", (in_tok + out_tok) * rate),
    ):
        out[key] = value
        out[f"{key}_per_instance"] = value / num_instances
        out[f"{key}_per_gpu"] = value / num_gpus
    if f.num_good is not None:
        out["request_goodput"] = f.num_good * rate
        out["request_goodput_per_gpu"] = f.num_good * rate / num_gpus
    for name, values in f.latencies.items():
        if values.size == 0:
            continue
        if isinstance(values, WeightedSample):
            w = values.scaled(1e3)
            out[f"mean_{name}_ms"] = w.mean()
            out[f"median_{name}_ms"] = w.median()
            out[f"std_{name}_ms"] = w.std()
            for p in percentiles:
                out[f"{percentile_key(p)}_{name}_ms"] = w.percentile(p)
            continue
        ms = values * 1e3
        mid, at = _median_and_percentiles(ms, percentiles, True)  # one partition
        out[f"mean_{name}_ms"] = float(ms.mean())
        out[f"median_{name}_ms"] = mid
        out[f"std_{name}_ms"] = float(ms.std())
        for p, value in zip(percentiles, at, strict=True):
            out[f"{percentile_key(p)}_{name}_ms"] = float(value)
    return out
