"""How an (engine, architecture) group's factors are held while the AIC rows fit them.

A fold of the cross-validation (`llmsizer.calibrate.aic_fit`) often cannot identify every
factor: holding out the only dense model of vLLM on Blackwell (Llama-3.1-70B) leaves MoE
rows, which say nothing about the dense GEMMs' or prefill attention's own speed. What
such a fold should do is keep those factors where the rest of the data put them, not let
them drift to whatever helps the MoE rows. So each group's fit is a posterior:

    loss(e) =  sum over rows r and metrics m of  w_r,m x rho(log(predicted / measured))
             + sum over fitted factors f of      (log(f / f_general) / sigma_f)^2

- **The prior's centre** is the engine's general fit (`calibrated_efficiency(engine)`,
  fitted on `measurements.csv`: dense models on Hopper and Ampere, offline throughput and
  online latency), so a factor the rows cannot see stays at a fraction of peak measured
  on other data. A split factor (`SPLIT_FROM`: the MoE grouped GEMM's, decode attention's)
  is centred on its parent's general value, not tied to the parent's value in the group:
  a tie would carry whatever the MoE rows do to the experts over to the dense GEMMs.
- **Sigma** (log units) is `sigma` for the general factors and `split_sigma` for the
  split ones (None: the split factors are not fitted and take their parents' values).
  Which sigmas, the cross-validation chooses, nested (`aic_fit.Recorded.choose`).
- **Which factors** (`fitted`): all by default; a group whose rows cannot tell some of
  them from what they mean elsewhere fits only the ones named, the rest held at the
  general fit (`GROUP_CANDIDATES`: TensorRT-LLM on Hopper, docs/aic_measurement.md
  section 32).
- **Weights.** A row's weight falls with its model's number of rows in the fit
  (`model_balance`: weight n_model^-balance, normalised to a mean of 1), so 299 MiniMax
  rows need not set every factor that 120 Llama rows also inform; `ttft_weight` scales
  the TTFT targets against the TPOT ones (TTFT under load is mostly queueing, which the
  simulator models: its residual speaks to the prefill factors, with its own noise).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from llmsizer.perf.efficiency import SPLIT_FROM

TTFT = "mean_ttft_ms"


@dataclass(frozen=True, slots=True)
class FitPrior:
    """The prior and weights of a group's fit (module docstring); log-unit sigmas."""

    sigma: float = 0.5  # a factor 1.65 x the general fit's is one sigma
    split_sigma: float | None = None  # None: the split factors are not fitted
    model_balance: float = 0.0  # 0: every row alike; 1: every model's rows weigh alike
    ttft_weight: float = 1.0
    fitted: tuple[str, ...] | None = None  # None: every factor; else these, the rest general

    def __post_init__(self) -> None:
        for name in ("sigma", "split_sigma", "ttft_weight"):
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise ValueError(f"FitPrior.{name} = {value!r}: must be > 0")
        if not 0 <= self.model_balance <= 1:
            raise ValueError(f"FitPrior.model_balance = {self.model_balance!r}: must be in [0, 1]")
        if self.fitted is not None and not self.fitted:
            raise ValueError("FitPrior.fitted = (): name a factor to fit, or None for all")

    def select(self, fit: Sequence[str]) -> tuple[str, ...]:
        """The factors of `fit` this prior lets the rows fit (`fitted`; module docstring)."""
        return tuple(f for f in fit if self.fitted is None or f in self.fitted)

    @property
    def fits_split(self) -> bool:
        return self.split_sigma is not None

    def sigmas(self, fit: Sequence[str]) -> dict[str, float]:
        """The prior's sigma for each factor in `fit`."""
        return {
            name: (self.split_sigma or self.sigma) if name in SPLIT_FROM else self.sigma
            for name in fit
        }

    def weights(self, models: Sequence[str], metrics: Sequence[str]) -> list[float]:
        """One weight per target, given each target's model and metric (module docstring):
        n_model^-model_balance (times `ttft_weight` for TTFT), normalised to a mean of 1."""
        count = Counter(models)
        raw = [
            count[model] ** -self.model_balance * (self.ttft_weight if metric == TTFT else 1.0)
            for model, metric in zip(models, metrics, strict=True)
        ]
        mean = sum(raw) / len(raw) if raw else 1.0
        return [w / mean for w in raw]

    def describe(self) -> str:
        """One line for reports and `llmsizer gpus --factors`."""
        split = (
            f"split factors around their parents' general values, sigma {self.split_sigma:g}"
            if self.fits_split
            else "split factors not fitted"
        )
        only = "" if self.fitted is None else f"only {', '.join(self.fitted)} fitted; "
        return (
            f"log-normal prior around the engine's general fit, sigma {self.sigma:g}; {split}; "
            f"{only}row weight n_model^-{self.model_balance:g}; TTFT weight {self.ttft_weight:g}"
        )


DEFAULT = FitPrior()  # `Recorded.fit` without a choice: the sigma the fits shipped with before
# The priors the nested cross-validation chooses among (`aic_fit.Recorded.choose`); with one,
# there is no choice and no nested fits. Shipped: the one prior the fits had before, with
# the robust loss on the rows only (`calibrate.fit`). Measured on the recorded rows
# (docs/tpot_residuals.md "Priors"): choosing between sigma 0.25 and 0.5 (the first the
# fallback where a fold's training rows hold one model) cut vLLM's leave-one-GPU-out TTFT
# p90 88 -> 52 % but raised its median 20 -> 24 % and SGLang's TPOT median 13 -> 15 %, for
# 3-5x the fits: not shipped (session 8), kept measurable by listing both here.
CANDIDATES: tuple[FitPrior, ...] = (DEFAULT,)

# Groups whose rows fit only some factors (`FitPrior.fitted`), by `engine:architecture`.
# TensorRT-LLM on Hopper (docs/aic_measurement.md section 32): its AIC rows are two gap runs
# on H100 (Llama-3.1-8B, Qwen3-235B), whose TTFT holds what no factor models (one client
# waiting for a slot through each Llama run, a 170 ms floor in the Qwen runs: section 11);
# fitted freely, the first-token hold, the prompt and attention factors and the per-sequence
# cost move to serve them and the v1.0 throughput rows of the same GPUs, which the general
# fit was fitted on, get worse (`bench/validate_perf.py`: H100/H200 offline 7.3 -> 8.6 %). What
# their TPOT does identify, and the offline rows cannot (their large batches read KV, not
# weights), is the weight streaming (section 22): that alone is fitted, on the TPOT (TTFT
# weighed 1 %: at full weight Llama's waiting client pulls the bandwidth down, 0.91 -> 0.84).
# Their Qwen runs' TTFT also names the MoE model's first-token hold (`moe_first_token_delay_s`,
# section 48: 0 in the general fit, which no MoE row informs), which nothing else moves.
GROUP_CANDIDATES: dict[str, tuple[FitPrior, ...]] = {
    "trtllm:hopper": (
        FitPrior(fitted=("gemm_bandwidth_efficiency", "moe_first_token_delay_s"), ttft_weight=0.01),
    ),
}


def candidates_for(group: tuple[str, str], candidates: Sequence[FitPrior]) -> Sequence[FitPrior]:
    """The priors an (engine, architecture) group's fits choose among: its own where
    `GROUP_CANDIDATES` names it, else `candidates`."""
    return GROUP_CANDIDATES.get(f"{group[0]}:{group[1]}", candidates)
