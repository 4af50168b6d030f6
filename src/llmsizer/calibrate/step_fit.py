"""Fit a step cost to measured runs by simulating them: for engines the GPU model can't describe.

The reference vLLM runs on a CPU, where no roofline applies; what it does per engine step can
still be measured from outside. Each measured run becomes a `MeasuredPoint` (its workload:
the same closed-loop concurrency, or the same send times, and the same lengths; and its
measured means). The fit replays every point through the simulator with the server's batching
configuration and a candidate

    step = a + b x prompt tokens + c x decoding sequences + d x context tokens read
    client token i = max(engine token i, engine token 0 + D)        (`llmsizer.sim.delivery`)

and moves (a, b, c, d, D) to minimise the sum over points and `FIT_METRICS` of

    (log(simulated / measured) / sigma)^2,   sigma = max(standard error / mean, NOISE_FLOOR)

relative errors, so milliseconds of TTFT and requests per second weigh alike, each counted in
units of its own sampling noise: a mean TTFT that a few stalled requests move by 20 % says
less than a mean TPOT known to 2 % (scipy `least_squares`, bounds >= 0, finite differences).

When the run also holds the server's own means (`llmsizer bench --server-metrics` reads
vLLM's histograms: `SERVER_METRICS`), they are fitted too, against the engine's token times
before the hold: they pin the step cost without the client's delivery noise.

D is the API server's first-chunk delay: a fixed time per request that the client sees and
the engine never spends, kept apart from the step cost so that it does not inflate the
prompt term. On the reference server the real hold is heavy-tailed (most requests wait a
few tens of ms, a few wait seconds while the shared machine stalls); D is its mean.

Theory check: runs produced by the simulator itself with known coefficients are fitted back
to those coefficients (tests/sizing/test_fit_steps.py).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from llmsizer.errors import import_extra
from llmsizer.metrics import summarize
from llmsizer.records import RequestRecord
from llmsizer.sim import Engine, EngineConfig, LinearStepCost
from llmsizer.sim.delivery import hold_first_token
from llmsizer.units import MS, US
from llmsizer.workload import Workload

FIT_METRICS = ("mean_ttft_ms", "mean_tpot_ms", "request_throughput")
SERVER_METRICS = ("server_mean_ttft_ms", "server_mean_tpot_ms")  # the engine's view, no hold
NOISE_FLOOR = 0.02  # no measured mean is trusted beyond 2 %: drift between runs is that large
PARAMETERS = ("a_s", "b_s_per_prefill_token", "c_s_per_decode_seq", "d_s_per_context_token")
DELAY = "first_token_delay_s"
# Optimiser units per parameter: ms, us/token, ms/seq, us/token, ms. Values of order 1-100,
# so one finite-difference step and one trust radius suit them all.
_SCALE = {PARAMETERS[0]: MS, PARAMETERS[1]: US, PARAMETERS[2]: MS, PARAMETERS[3]: US, DELAY: MS}


@dataclass(frozen=True, slots=True)
class MeasuredPoint:
    """One measured run to reproduce: its workload and its measured `FIT_METRICS`.

    `measured` holds the `llmsizer.metrics.summarize` values (ms and req/s) of the run's
    successful requests, and any `SERVER_METRICS` the server reported for them; `workload`
    the same requests in send order; `relative_error` the
    standard error of each mean over the mean (std / sqrt(n) / mean; for throughput that of
    the mean E2E latency, which sets it), missing ones counted as `NOISE_FLOOR`.
    """

    label: str
    workload: Workload
    measured: Mapping[str, float]
    relative_error: Mapping[str, float] = field(default_factory=dict)

    def sigma(self, metric: str) -> float:
        return max(self.relative_error.get(metric, 0.0), NOISE_FLOOR)


def point_from_records(
    records: Sequence[RequestRecord],
    concurrency: int | None,
    label: str,
    server: Mapping[str, float] | None = None,
) -> MeasuredPoint:
    """A point from a run's records: a closed loop at `concurrency`, or (None) the records'
    own send times replayed. Failed requests are left out, as the metrics leave them out;
    output lengths are those produced. `server`: the run's result keys, of which
    `SERVER_METRICS` (ms) are kept. Raises `ValueError` for a run with no success."""
    ok = sorted((r for r in records if r.ok), key=lambda r: (r.arrival_s, r.request_id))
    if not ok:
        raise ValueError(f"{label}: no successful request to fit on")
    prompt = np.array([r.num_prompt_tokens for r in ok], dtype=np.int64)
    output = np.array([r.num_output_tokens for r in ok], dtype=np.int64)
    if concurrency is None:
        sent = np.array([r.arrival_s for r in ok], dtype=np.float64)
        workload = Workload(prompt, output, arrival_s=sent - sent[0], source=label)
    else:
        workload = Workload(prompt, output, concurrency=concurrency, source=label)
    s = summarize(ok, percentiles=())
    missing = [m for m in FIT_METRICS if not s.get(m, 0.0) > 0]
    if missing:
        raise ValueError(f"{label}: {missing} not measured or zero (outputs of one token?)")
    root_n = math.sqrt(len(ok))
    noise = {
        m: s[f"std_{name}_ms"] / root_n / s[f"mean_{name}_ms"]
        for m, name in zip(FIT_METRICS, ("ttft", "tpot", "e2el"), strict=True)
    }
    measured = {m: s[m] for m in FIT_METRICS}
    measured |= {m: float(v) for m, v in (server or {}).items() if m in SERVER_METRICS and v}
    return MeasuredPoint(label, workload, measured, noise)


@dataclass(frozen=True, slots=True)
class Residual:
    """A measured metric beside the fitted simulator's value (same units: ms or req/s)."""

    label: str
    metric: str
    measured: float
    predicted: float

    @property
    def error(self) -> float:
        """Relative error of the prediction: predicted / measured - 1."""
        return self.predicted / self.measured - 1.0


@dataclass(frozen=True, slots=True)
class StepFit:
    """The fitted step cost and first-token delay (seconds), and how well they reproduce
    every point: one `Residual` per point and metric."""

    step_cost: LinearStepCost
    first_token_delay_s: float
    residuals: tuple[Residual, ...]
    num_simulations: int

    @property
    def max_abs_error(self) -> float:
        return max(abs(r.error) for r in self.residuals)

    @property
    def rms_error(self) -> float:
        return math.sqrt(sum(r.error**2 for r in self.residuals) / len(self.residuals))


def simulate_point(
    config: EngineConfig, cost: LinearStepCost, first_token_delay_s: float, point: MeasuredPoint
) -> dict[str, float]:
    """The simulator's `FIT_METRICS` (client view, after the hold) and `SERVER_METRICS`
    (engine view) for `point`'s workload, in ms and req/s."""
    engine = Engine(config, cost).run(point.workload).records
    client = summarize([hold_first_token(r, first_token_delay_s) for r in engine], percentiles=())
    out = {m: client[m] for m in FIT_METRICS}
    if any(m in point.measured for m in SERVER_METRICS):
        inside = summarize(engine, percentiles=())
        out |= {"server_mean_ttft_ms": inside["mean_ttft_ms"]}
        out |= {"server_mean_tpot_ms": inside["mean_tpot_ms"]}
    return out


def _unpack(x: np.ndarray, free: Sequence[str], fixed: Mapping[str, float]) -> dict[str, float]:
    """Optimiser vector (scaled units) -> every parameter in seconds."""
    values = dict(fixed)
    values.update({name: float(v) * _SCALE[name] for name, v in zip(free, x, strict=True)})
    return values


def _split(values: Mapping[str, float]) -> tuple[LinearStepCost, float]:
    return LinearStepCost(*(values[p] for p in PARAMETERS)), values[DELAY]


def fit_step_cost(
    points: Sequence[MeasuredPoint],
    config: EngineConfig,
    *,
    fit_first_token_delay: bool = True,
    fit_context: bool = True,
    initial: Mapping[str, float] | None = None,
    max_simulations: int = 400,
) -> StepFit:
    """Fit (a, b, c, d, D) to `points` as the module notes say; `config` is the measured
    server's batching (max_num_seqs, max_num_batched_tokens, chunked prefill, KV blocks).

    `fit_first_token_delay=False` holds D at 0 (a server that streams as it computes);
    `fit_context=False` holds d at 0 (short contexts cannot tell it from c). `initial`
    (seconds, by `PARAMETERS` and `DELAY` names) replaces the guess from the lightest point.
    """
    if not points:
        raise ValueError("no measured points to fit on")
    start = {**_initial_guess(points), **(initial or {})}
    fixed = {}
    if not fit_first_token_delay:
        fixed[DELAY] = 0.0
    if not fit_context:
        fixed[PARAMETERS[3]] = 0.0
    free = [p for p in (*PARAMETERS, DELAY) if p not in fixed]
    targets = [(i, m) for i, p in enumerate(points) for m in p.measured]
    measured = np.array([points[i].measured[m] for i, m in targets])
    sigma = np.array([points[i].sigma(m) for i, m in targets])
    calls = [0]

    def residuals(x: np.ndarray) -> np.ndarray:
        calls[0] += 1
        cost, delay = _split(_unpack(x, free, fixed))
        runs = [simulate_point(config, cost, delay, p) for p in points]
        simulated = np.array([runs[i][m] for i, m in targets])
        # a candidate whose steps cost nothing predicts 0: a large finite residual, not -inf
        return np.log(np.maximum(simulated, 1e-9 * measured) / measured) / sigma

    x0 = np.array([start[name] / _SCALE[name] for name in free])
    # scipy: ~0.5 s to import and 140 MB installed (extra `fit`), only when fitting
    scipy_optimize = import_extra("scipy.optimize", "fit", "fitting a step cost")
    solution = scipy_optimize.least_squares(
        residuals,
        x0,
        bounds=(0.0, np.inf),
        diff_step=1e-3,
        x_scale=np.maximum(x0, 1.0),
        max_nfev=max(1, max_simulations // max(1, len(free) + 1)),
    )
    cost, delay = _split(_unpack(solution.x, free, fixed))
    return StepFit(cost, delay, _residuals(points, config, cost, delay), calls[0])


def _residuals(
    points: Sequence[MeasuredPoint], config: EngineConfig, cost: LinearStepCost, delay: float
) -> tuple[Residual, ...]:
    out = []
    for p in points:
        simulated = simulate_point(config, cost, delay, p)
        out += [Residual(p.label, m, p.measured[m], simulated[m]) for m in p.measured]
    return tuple(out)


def _initial_guess(points: Sequence[MeasuredPoint]) -> dict[str, float]:
    """From the point with the fastest tokens: most of a decode step is the fixed part a,
    the prompt term takes half the time to first token, the delay the other half."""
    light = min(points, key=lambda p: p.measured["mean_tpot_ms"])
    tpot_s = light.measured["mean_tpot_ms"] * MS
    ttft_s = light.measured["mean_ttft_ms"] * MS
    isl = float(np.mean(light.workload.num_prompt_tokens))
    return {
        PARAMETERS[0]: 0.8 * tpot_s,
        PARAMETERS[1]: max(ttft_s - tpot_s, 0.0) / 2 / isl,
        PARAMETERS[2]: 0.1 * tpot_s,
        PARAMETERS[3]: 0.0,
        DELAY: max(ttft_s - tpot_s, 0.0) / 2,
    }
