"""Efficiency factors per engine and GPU architecture, fitted on the AIC silicon rows, and
their honest accuracy: leave one GPU out, leave one model out.

Each mapped row (`llmsizer.calibrate.aic`) is a closed loop, whose schedule never reads the
clock, so it is simulated once and its schedule recorded (`record_traces`); every fit and
every fold then re-prices the recorded steps (`llmsizer.calibrate.replay`), which is exact.

- **Groups.** Rows are fitted per (engine, GPU architecture): one set of physically
  meaningful factors (achieved fractions of peak FLOPS and bandwidth by kind of work, fixed
  overheads in seconds) per group, never per row. The fit starts from, and is held near
  (a log-normal prior, `llmsizer.calibrate.aic_prior`), the engine's general fit
  (`calibrated_efficiency`), with a robust loss on the rows (`ROBUST_SCALE`) so that rows
  an unmodelled effect puts far off do not drag the rest. A row whose prompts the server
  saw at another length (`AicCase.unfitted`, `llmsizer.calibrate.aic_clients`) is
  predicted and scored, never trained on (`trains`). A row whose timed first wave waited
  for a cold server's one-off build (`AicCase.first_use_builds`, `aic_clients`) is priced
  with it (`first_use_build_s`, fitted where the training rows hold one, else at its prior
  `FIRST_USE_PRIOR_S` for an engine whose rows hold one). The prior's sigmas (and whether
  the split factors are fitted) are chosen among `aic_prior.CANDIDATES` by a leave one
  model out inside each fit's training rows (`Recorded.choose`), so a cross-validation
  fold never tunes on the rows it holds out.
- **The throughput tables of the same GPUs join the fit.** `measurements.csv` rows on GPUs
  of a fitted architecture (`measurement_cases`: the v1.0 offline TensorRT-LLM table on
  B200, GB200, RTX PRO 6000, H100, H200; the C++ runtime's tables keep their own fit) are
  fitted with the AIC rows of their engine, so the factors
  serve both the latencies under load and the peak throughput. They are training data
  only: the accuracy is reported on the AIC rows, and a fold that holds a GPU out holds
  its measurement rows out too.
- **Cross-validation.** For each group and each GPU (model) in it, the factors are fitted on
  the group's other GPUs (models) and the held-out rows predicted with them. A fold left
  with fewer than `MIN_FIT_ROWS` AIC rows (ten factors on two rows fit the rows, not the
  engine; TensorRT-LLM's B200 held out leaves 2 GB200 rows) is priced as a generation never
  seen (as vLLM's and TensorRT-LLM's H100, each its engine's only Hopper GPU): the engine's
  general fit (`fold_rows`). Fitting it on the engine's other generations instead set a
  Blackwell first-token hold on H100 rows holding a waiting client (`docs/aic_measurement.md`
  sections 13, 49, 57). Groups whose fits do
  not ship are scored with that general fit throughout. A fold whose rows lack a kind of
  work the general data lacks too takes the other generations' fit of it (`aic_carry`).
  What ships is named by architecture or by group (`ships`): `blackwell` ships every
  engine's Blackwell fit, `vllm:hopper` and `trtllm:hopper` one group each (the latter
  fitting two factors: `aic_prior.GROUP_CANDIDATES`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

import numpy as np

from llmsizer.calibrate.aic import AIC_GPUS, AicCase
from llmsizer.calibrate.aic_carry import shipped_factors, with_carried
from llmsizer.calibrate.aic_prior import CANDIDATES, DEFAULT, FitPrior, candidates_for
from llmsizer.calibrate.features import VERIFY_SEQUENCES
from llmsizer.calibrate.fit import FitResult, Target, fit_factors, predictions
from llmsizer.calibrate.gpu_fit import DEFAULT_FIT_FACTORS, LATENCY_METRICS
from llmsizer.calibrate.measurements import Measurement
from llmsizer.calibrate.record import record_traces
from llmsizer.calibrate.replay import ScheduleTrace
from llmsizer.perf import EfficiencyFactors
from llmsizer.perf.calibrated import calibrated_efficiency
from llmsizer.specs import get_gpu, get_model
from llmsizer.sweep import Sweep

METRICS = ("mean_ttft_ms", "mean_tpot_ms")
ROBUST_SCALE = 0.3  # log errors beyond ~35 % cost linearly (soft L1)
# the general factors; the experts' GEMM at prompt sizes (docs/aic_measurement.md section 16);
# the experts' weight reads and decode attention where the prior says so (`split_sigma`); a
# split factor is held near its parent's value in the general fit (`EfficiencyFactors`)
PROMPT = ("experts_compute_efficiency",)
SPLIT = ("experts_bandwidth_efficiency", "decode_attention_compute_efficiency")
# kinds of work only some models have (GLM-5's indexer, W4A16 experts): zero elsewhere; the
# extra first-token hold of a model with routed experts (docs/aic_measurement.md section 48),
# fitted for `MOE_HOLD_ENGINES` where the training rows have a MoE model, the hold of every
# model then only where they have a dense model's TTFT (else held at the general fits' 0: the
# MoE hold carries it all); neither has a prior (the general fits' 0 is no centre). Where it
# wins: TensorRT-LLM (LOMO TTFT 32 -> 19 %). vLLM's dense and MoE rows hold alike (17-36
# against 12-64 ms, section 17): split, its folds without a dense model priced Llama-3.1-70B's
# hold at 0 (LOGO TTFT 18.7 -> 19.9 %). SGLang has no dense row: split or not, its rows price
# the same, and unsplit a dense SGLang deployment keeps the hold measured (section 48)
HOLD, MOE_HOLD = "first_token_delay_s", "moe_first_token_delay_s"
MOE_HOLD_ENGINES = frozenset({"trtllm"})
KINDS = ("indexer_overhead_s", "experts_dequant_efficiency", MOE_HOLD)
# a step's cost per sequence, 0 in the general fits: the AIC fit's prior 2 us (vLLM PR 46112)
SEQUENCE, SEQUENCE_PRIOR_S = ("sequence_overhead_s",), 2e-6
# a speculative verify step's cost per decoding sequence: fitted where the training rows
# speculate, else left at the general fit's (0); its prior (docs/aic_measurement.md section 34)
VERIFY, VERIFY_PRIOR_S = "verify_sequence_overhead_s", 50e-6
# a cold server's one-off build (`aic_clients.first_use_builds`): its prior, an nvcc build of
# a CUTLASS FMHA module (three .cu files, tens of seconds: docs/aic_measurement.md section 38),
# and a wide sigma (log units), so the rows that hold one set it
FIRST_USE, FIRST_USE_PRIOR_S, FIRST_USE_SIGMA = "first_use_build_s", 60.0, 1.0
FIT = (*DEFAULT_FIT_FACTORS, "interconnect_efficiency", HOLD, *KINDS, *SEQUENCE,
       VERIFY, FIRST_USE, *PROMPT, *SPLIT)  # fmt: skip
Group = tuple[str, str]  # (engine, GPU architecture)
Memo = dict[tuple[str, tuple[int, ...], FitPrior], FitResult]  # (engine, rows, prior) -> fit
MIN_FIT_ROWS = 30  # fewer AIC rows: a fold is priced as a generation unseen (module docstring)


def ships(group: Group, shipping: Collection[str]) -> bool:
    """Whether `group`'s fit ships: its architecture or `engine:architecture` is named."""
    return group[1] in shipping or f"{group[0]}:{group[1]}" in shipping


Predicted = dict[int, dict[str, float]]  # case index -> metric -> predicted value


def measurement_cases(
    measurements: Sequence[Measurement], architectures: Collection[str]
) -> list[AicCase]:
    """The `measurements.csv` rows on GPUs of `architectures`, as cases to fit beside the AIC
    rows (module docstring): GPUs named as the AIC rows name them, ids `measurements:<id>`.
    The C++ runtime's rows stay out: a fit of the AIC rows prices the PyTorch backend they
    ran, and those rows keep their own fit (`calibrate.validation.shipped_factors`)."""
    aic_name = {gpu: system for system, gpu in AIC_GPUS.items()}
    out = []
    for m in measurements:
        gpu = get_gpu(m.spec.gpu)
        if m.runtime != "cpp" and ships((m.spec.preset, gpu.architecture), architectures):
            system = aic_name.get(gpu.key, gpu.key)
            model = get_model(m.spec.model).name
            out.append(
                AicCase(f"measurements:{m.row_id}", m.spec.preset, system, model, m.spec,
                        dict(m.measured), m.source_id)
            )  # fmt: skip
    return out


def is_aic(case: AicCase) -> bool:
    """An AIC row, not a `measurements.csv` row fitted beside them."""
    return not case.row_id.startswith("measurements:")


def trains(case: AicCase) -> bool:
    """Whether the fits train on `case`: not a row the mapping marks `unfitted` (a prompt of
    unknown length, `llmsizer.calibrate.aic_clients`), which is predicted all the same."""
    return case.unfitted is None


def group_of(case: AicCase) -> Group:
    """The (engine, GPU architecture) whose factors price `case`."""
    return case.backend, get_gpu(case.spec.gpu).architecture


@dataclass(frozen=True, slots=True)
class Recorded:
    """The mapped rows and their recorded schedules, index for index."""

    cases: tuple[AicCase, ...]
    traces: tuple[ScheduleTrace, ...]

    def __post_init__(self) -> None:
        """Each trace carries its case's one-off builds and whether its model has routed
        experts (a trace pickled before the fields existed gets them here too); a recording
        without traces (a test's) is left as it is."""
        if len(self.traces) != len(self.cases):
            return
        traces = tuple(
            dataclasses.replace(
                t, first_use_builds=c.first_use_builds, moe=get_model(c.spec.model).moe is not None
            )
            for c, t in zip(self.cases, self.traces, strict=True)
        )
        object.__setattr__(self, "traces", traces)

    def __add__(self, other: Recorded) -> Recorded:
        return Recorded(self.cases + other.cases, self.traces + other.traces)

    @classmethod
    def record(cls, cases: Sequence[AicCase], workers: int | Sweep = 1) -> Recorded:
        """Simulate each case once (at the engine's general fit; any factors give the same
        closed-loop schedule)."""
        traces: list[ScheduleTrace | None] = [None] * len(cases)
        for engine in sorted({c.backend for c in cases}):
            indices = [i for i, c in enumerate(cases) if c.backend == engine]
            specs = [cases[i].spec for i in indices]
            latencies = [bool(LATENCY_METRICS & set(cases[i].measured)) for i in indices]
            recorded = record_traces(specs, calibrated_efficiency(engine), latencies, workers)
            for i, trace in zip(indices, recorded, strict=True):
                traces[i] = trace
        return cls(tuple(cases), tuple(t for t in traces if t is not None))

    def has_builds(self, engine: str) -> bool:
        """Whether some row of `engine` waited for a one-off build (`first_use_build_s`)."""
        return any(c.first_use_builds for c in self.cases if c.backend == engine)

    def num_fitted(self, indices: Sequence[int]) -> int:
        """How many of the cases at `indices` are AIC rows a fit trains on (`trains`)."""
        return sum(is_aic(self.cases[i]) and trains(self.cases[i]) for i in indices)

    def groups(self) -> dict[Group, list[int]]:
        """Case indices by (engine, architecture)."""
        out: dict[Group, list[int]] = {}
        for i, case in enumerate(self.cases):
            out.setdefault(group_of(case), []).append(i)
        return out

    def fit(self, indices: Sequence[int], engine: str, prior: FitPrior = DEFAULT) -> FitResult:
        """Factors for `engine` fitted on the cases at `indices` under `prior` (module
        docstring, `llmsizer.calibrate.aic_prior`); the rows it must not train on
        (`trains`) are left out."""
        indices = [i for i in indices if trains(self.cases[i])]
        traces = [self.traces[i] for i in indices]
        targets: list[Target] = [
            (k, metric, value)
            for k, i in enumerate(indices)
            for metric, value in self.cases[i].measured.items()
        ]
        fit = prior.select(FIT if prior.fits_split else FIT[: -len(SPLIT)])
        if not any(t.features[:, VERIFY_SEQUENCES].any() for t in traces):
            fit = tuple(f for f in fit if f != VERIFY)  # no verify step: nothing to fit
        if engine not in MOE_HOLD_ENGINES or not any(t.moe for t in traces):
            fit = tuple(f for f in fit if f != MOE_HOLD)  # not split, or no MoE model here
        elif not any(t.has_latencies and not t.moe for t in traces):  # no dense model's TTFT:
            fit = tuple(f for f in fit if f != HOLD)  # the MoE hold carries the whole hold
        start = fit_start(engine, fit, builds=self.has_builds(engine))
        if not any(t.first_use_builds for t in traces):
            fit = tuple(f for f in fit if f != FIRST_USE)  # none here: held at its start
        models = [self.cases[indices[k]].model for k, _, _ in targets]
        sigmas = prior.sigmas(fit)
        if FIRST_USE in sigmas:
            sigmas[FIRST_USE] = FIRST_USE_SIGMA
        return fit_factors(
            traces,
            targets,
            start,
            fit,
            prior_sigma=sigmas,
            robust_scale=ROBUST_SCALE,
            weights=prior.weights(models, [m for _, m, _ in targets]),
        )

    def predict(self, indices: Sequence[int], factors: EfficiencyFactors) -> Predicted:
        """The cases at `indices` re-priced under `factors`."""
        out: Predicted = {}
        for i in indices:
            measured = self.cases[i].measured
            targets: list[Target] = [(0, m, v) for m, v in measured.items()]
            values = predictions([self.traces[i]], targets, factors)
            out[i] = dict(zip(measured, values, strict=True))
        return out

    def fitted(
        self, indices: Sequence[int], engine: str, prior: FitPrior, memo: Memo | None
    ) -> FitResult:
        """`fit`, kept in `memo` (when given) by rows and prior: the folds of one group
        share most of their inner fits (leave one model out of A, B, C inside the fold
        without D is the fold without D and C, ... )."""
        key = (engine, tuple(indices), prior)
        if memo is None:
            return self.fit(indices, engine, prior)
        if key not in memo:
            memo[key] = self.fit(indices, engine, prior)
        return memo[key]

    def choose(
        self,
        train: Sequence[int],
        engine: str,
        candidates: Sequence[FitPrior],
        memo: Memo | None = None,
    ) -> FitPrior:
        """The candidate prior whose fits on `train` best predict each model of `train` left
        out in turn (inner leave one model out: the mean over models of each model's mean
        |log error| of TTFT and TPOT), so a fold's prior is chosen on its training rows
        alone; the first candidate when `train` holds fewer than two models."""
        scored = [i for i in train if is_aic(self.cases[i]) and trains(self.cases[i])]
        models = sorted({self.cases[i].model for i in scored})
        if len(candidates) < 2 or len(models) < 2:
            return candidates[0]
        scores = []
        for prior in candidates:
            per_model = []
            for model in models:
                inner = [i for i in train if self.cases[i].model != model]
                if self.num_fitted(inner) < MIN_FIT_ROWS:
                    continue  # priced by the general fit whatever the prior
                test = [i for i in scored if self.cases[i].model == model]
                predicted = self.predict(test, self.fitted(inner, engine, prior, memo).factors)
                per_model.append(np.mean([_abs_log_errors(self.cases[i], predicted[i])
                                          for i in test]))  # fmt: skip
            scores.append(np.mean(per_model) if per_model else 0.0)
        return candidates[int(np.argmin(scores))]

    def fit_groups(
        self,
        candidates: Sequence[FitPrior] = CANDIDATES,
        chosen: dict[tuple[str, ...], FitPrior] | None = None,
        memo: Memo | None = None,
    ) -> dict[Group, FitResult]:
        """One fit per (engine, architecture) on all its rows, under the prior `choose`
        picks among `candidates` on them (into `chosen`, when given): what ships, once
        `aic_carry.carried_fits` has given each what its rows could not fit."""
        out = {}
        for group, idx in self.groups().items():
            prior = self.choose(idx, group[0], candidates_for(group, candidates), memo)
            if chosen is not None:
                chosen[group] = prior
            out[group] = self.fitted(idx, group[0], prior, memo)
        return out

    def shipped(self, fits: dict[Group, FitResult]) -> Predicted:
        """Every case priced with its group's fit in `fits`, else its engine's general fit
        with what the engine's fits carry (`aic_carry`)."""
        out: Predicted = {}
        for group, idx in self.groups().items():
            out |= self.predict(idx, shipped_factors(fits, group))
        return out

    def fold_rows(
        self,
        group: Sequence[int],
        held: Callable[[AicCase], str],
        value: str,
        min_rows: int = MIN_FIT_ROWS,
    ) -> list[int]:
        """The rows a fold of `group` holding out `value` fits on: the group's others; none
        (the generation is priced as one never seen) if fewer than `min_rows` AIC rows are
        left (module docstring)."""
        train = [i for i in group if held(self.cases[i]) != value]
        return train if self.num_fitted(train) >= max(min_rows, 1) else []

    def fold_factors(
        self,
        group: Group,
        held: Callable[[AicCase], str],
        value: str,
        architectures: Collection[str],
        min_rows: int = MIN_FIT_ROWS,
        candidates: Sequence[FitPrior] = CANDIDATES,
        memo: Memo | None = None,
    ) -> tuple[EfficiencyFactors, FitPrior | None]:
        """What prices `group`'s cases of `value` in the fold without its `held` value, and
        its own fit's prior (None: none): that fit (`fold_rows`) if the group ships, else the
        general fit; either with what the engine's other shipping groups fit in the fold
        carried (`aic_carry`). Priors are chosen on the training rows (`choose`: nested);
        `memo` keeps the fits for the next call (`fitted`)."""
        groups = self.groups()

        def fold(g: Group) -> tuple[FitResult, FitPrior] | None:
            train = self.fold_rows(groups[g], held, value, min_rows)
            prior = self.choose(train, g[0], candidates_for(g, candidates), memo)
            return (self.fitted(train, g[0], prior, memo), prior) if train else None

        own = fold(group) if ships(group, architectures) else None
        others = (o[0] for g in groups if g[0] == group[0] and g != group
                  if ships(g, architectures) and (o := fold(g)))  # fmt: skip
        general = calibrated_efficiency(group[0])
        return with_carried(own[0] if own else None, general, others), own[1] if own else None

    def leave_one_out(
        self,
        held: Callable[[AicCase], str],
        architectures: Collection[str],
        min_rows: int = MIN_FIT_ROWS,
        folds: dict[tuple[str, str, str], EfficiencyFactors] | None = None,
        candidates: Sequence[FitPrior] = CANDIDATES,
        chosen: dict[tuple[str, ...], FitPrior] | None = None,
        memo: Memo | None = None,
    ) -> Predicted:
        """Every case predicted by factors fitted without any case sharing its `held` value
        (its GPU, its model): `fold_factors` for each group and value. `folds` and `chosen`,
        when given, receive each fold's factors and prior by (engine, architecture,
        held-out value), for rows priced outside this recording and for the report."""
        out: Predicted = {}
        for group, idx in self.groups().items():
            for value in sorted({held(self.cases[i]) for i in idx}):
                factors, prior = self.fold_factors(
                    group, held, value, architectures, min_rows, candidates, memo
                )
                if folds is not None:
                    folds[(*group, value)] = factors
                if chosen is not None and prior is not None:
                    chosen[(*group, value)] = prior
                out |= self.predict([i for i in idx if held(self.cases[i]) == value], factors)
        return out


def fit_start(
    engine: str, fit: Collection[str] = FIT, *, builds: bool = False
) -> EfficiencyFactors:
    """An AIC fit's start and prior centre: the general fit, its per-sequence cost, when
    `fit` fits it and the general fit has none, at `SEQUENCE_PRIOR_S` (held, it stays the
    general fit's); its verify steps' per-sequence cost likewise at `VERIFY_PRIOR_S`; with
    `builds` (the engine's rows hold a one-off build), its build at `FIRST_USE_PRIOR_S`."""
    general = calibrated_efficiency(engine)
    if builds and not general.first_use_build_s:
        general = general.replace(first_use_build_s=FIRST_USE_PRIOR_S)
    if VERIFY in fit and not general.verify_sequence_overhead_s:
        general = general.replace(verify_sequence_overhead_s=VERIFY_PRIOR_S)
    if general.sequence_overhead_s or "sequence_overhead_s" not in fit:
        return general
    return general.replace(sequence_overhead_s=SEQUENCE_PRIOR_S)


def _abs_log_errors(case: AicCase, predicted: dict[str, float]) -> float:
    """The mean over `METRICS` of |log(predicted / measured)|."""
    return float(np.mean([abs(math.log(predicted[m] / case.measured[m])) for m in METRICS]))
