"""Fitted efficiency factors as data: the calibration file format and the packaged fit.

A calibration file (YAML) holds `EfficiencyFactors` and says what they were fitted on and
how well they fit; `load_calibration` validates it strictly (an unknown key, a factor out of
its range or a wrong kind is an error naming it and what is allowed):

    kind: efficiency_factors          # what the file calibrates (required)
    engine: trtllm                    # factors left out take this engine's priors
    factors:                          # EfficiencyFactors fields; SI units (seconds)
      gemm_compute_efficiency: 0.62
      step_overhead_s: 0.00031
    fitted_on: {data: measurements.csv, sha256: ..., num_rows: 412}   # free provenance
    residuals:                        # per metric: rows, median and mean abs. % error
      output_throughput: {num_rows: 412, median_ape_pct: 8.1, mean_ape_pct: 11.0}
    device: {...}                     # optional: the device the factors were measured on

A file written by `llmsizer collect` carries `device`, in the GPU catalog's format with
the peaks its factors are fractions of, so `--gpu FILE` (or `predict` with no `--gpu`)
prices the device it was measured on, catalogued or not.

`calibrated_efficiency(engine, architecture)` reads the fit shipped in
`perf/data/calibrated_<engine>_<architecture>.yaml` (written by `bench/validate_aic.py --fit`
from the AIC silicon rows of that GPU generation) where there is one, else
`perf/data/calibrated_<engine>.yaml` (written by `bench/validate_perf.py --fit`), with the
factors the AIC fits carry to a generation without a fit of its own (`carried_<engine>.yaml`,
`llmsizer.calibrate.aic_carry`), so normal use never re-fits.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from llmsizer.errors import format_validation_error, parse_yaml, read_yaml_mapping
from llmsizer.output import write_atomic
from llmsizer.perf.efficiency import EfficiencyFactors, EnginePreset, default_efficiency
from llmsizer.specs.gpus import gpu_from_entry

KIND = "efficiency_factors"


class ResidualSummary(BaseModel):
    """How well the factors fit one metric: rows and absolute percentage errors."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    num_rows: int = Field(ge=0, description="Measurements of this metric in the fit.")
    median_ape_pct: float = Field(ge=0, description="Median absolute percentage error.")
    mean_ape_pct: float = Field(ge=0, description="Mean absolute percentage error.")


class CalibrationFile(BaseModel):
    """The file's content (module docstring); `efficiency()` gives the factors."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    kind: Literal["efficiency_factors"] = Field(description="What the file calibrates.")
    engine: EnginePreset = Field(
        EnginePreset.VLLM, description="Priors for the factors not listed."
    )
    factors: dict[str, float] = Field(description="EfficiencyFactors fields, SI units.")
    fitted_on: dict[str, Any] = Field(
        default_factory=dict, description="What the factors were fitted on (provenance)."
    )
    residuals: dict[str, ResidualSummary] = Field(
        default_factory=dict, description="Fit quality per metric."
    )
    device: dict[str, Any] | None = Field(
        None,
        description="The device the factors were measured on (`llmsizer collect`), as a "
        "GPU catalog entry whose peaks the factors are fractions of.",
    )

    @field_validator("device")
    @classmethod
    def _valid_device(cls, device: dict[str, Any] | None) -> dict[str, Any] | None:
        if device is not None:
            gpu_from_entry("device", device)  # the catalog's strict checks
        return device

    @field_validator("factors")
    @classmethod
    def _known_and_in_range(cls, factors: dict[str, float]) -> dict[str, float]:
        EfficiencyFactors.from_dict(factors)  # unknown names and ranges raise ValueError
        return factors

    def efficiency(self) -> EfficiencyFactors:
        """The engine's priors with the file's factors in their place."""
        return default_efficiency(self.engine).replace(**self.factors)


def save_calibration(path: Path, calibration: CalibrationFile) -> None:
    """Write `calibration` as YAML; `load_calibration` reads the same factors back."""
    data = calibration.model_dump(mode="json")
    write_atomic(path, yaml.safe_dump(data, sort_keys=False, width=100))


def read_calibration(path: Path) -> CalibrationFile:
    """Read and validate a calibration file; `ValueError` names each bad key or value."""
    return parse_calibration(read_yaml_mapping(path, "calibration file"), str(path))


def parse_calibration(data: Any, where: str = "calibration") -> CalibrationFile:
    """Validate already-parsed YAML (see `read_calibration`)."""
    if not isinstance(data, dict):
        raise ValueError(f"{where} must hold a mapping of keys, not {data!r}")
    if data.get("kind") == "fitted_step_cost":  # llmsizer calibrate's kind
        raise ValueError(
            f"calibration file '{where}' is a kind: {data['kind']} file; this needs a kind: "
            f"{KIND} file (efficiency factors of the GPU model, bench/validate_perf.py --fit)"
        )
    try:
        return CalibrationFile.model_validate(data)
    except ValidationError as e:
        message = format_validation_error(
            e, f"calibration file '{where}'", allowed_keys=CalibrationFile.model_fields
        )
        raise ValueError(message) from e


def load_calibration(path: Path) -> EfficiencyFactors:
    """The efficiency factors of the calibration file at `path` (strictly validated)."""
    return read_calibration(path).efficiency()


@cache
def packaged_calibration(
    engine: EnginePreset | str, architecture: str | None = None
) -> CalibrationFile:
    """The fit shipped with llmsizer for `engine` (module docstring): the one for GPUs of
    `architecture` (`calibrated_<engine>_<architecture>.yaml`) where there is one, else
    what a generation without a fit of its own gets (`carried_calibration`); with no
    `architecture`, the engine's general fit alone (what the AIC fits start from)."""
    name = f"calibrated_{EnginePreset.parse(engine).value}"
    specific = _data().joinpath(f"{name}_{architecture}.yaml")
    if architecture and specific.is_file():
        return parse_calibration(parse_yaml(specific.read_text()), specific.name)
    general = _data().joinpath(f"{name}.yaml")
    fit = parse_calibration(parse_yaml(general.read_text()), general.name)
    return carried_calibration(fit) if architecture else fit


def carried_calibration(general: CalibrationFile) -> CalibrationFile:
    """`general` (an engine's general fit) with the factors of the kinds of work its data
    holds none of that the engine's AIC fits of other GPU generations carry
    (`carried_<engine>.yaml`, written by `bench/fit_aic.py --write`:
    `llmsizer.calibrate.aic_carry`), marked carried over, where the engine has such a file."""
    path = _data().joinpath(f"carried_{general.engine.value}.yaml")
    if not path.is_file():
        return general
    carried = parse_calibration(parse_yaml(path.read_text()), path.name)
    info = general.fitted_on
    origin = carried.fitted_on.get("carried_from", {})
    note = "; ".join(
        f"{name} from {path.name}, the mean of the AIC fits on "
        + ", ".join(f"{arch} {value:g}" for arch, value in origin.get(name, {}).items())
        for name in carried.factors
    )
    fitted_on = info | {
        "carried_factors": [*info.get("carried_factors", ()), *carried.factors],
        "carried_over": "; ".join(filter(None, (info.get("carried_over"), note))),
    }
    factors = general.factors | carried.factors
    return general.model_copy(update={"factors": factors, "fitted_on": fitted_on})


def _data() -> Traversable:
    return resources.files("llmsizer.perf").joinpath("data")


def packaged_architectures(engine: EnginePreset | str) -> tuple[str, ...]:
    """The GPU architectures with a fit of their own for `engine`."""
    prefix = f"calibrated_{EnginePreset.parse(engine).value}_"
    names = (f.name for f in _data().iterdir() if f.name.startswith(prefix))
    return tuple(sorted(n.removeprefix(prefix).removesuffix(".yaml") for n in names))


def calibrated_efficiency(
    engine: EnginePreset | str = EnginePreset.VLLM, architecture: str | None = None
) -> EfficiencyFactors:
    """Efficiency factors fitted on the calibration set, for `engine` on GPUs of
    `architecture` (see the file's `fitted_on` for what was fitted and what was carried
    over from priors)."""
    return packaged_calibration(engine, architecture).efficiency()
