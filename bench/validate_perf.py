"""The GPU performance model against the published calibration set; optionally re-fit it.

    .venv/bin/python bench/validate_perf.py            # validate: priors vs shipped fit
    .venv/bin/python bench/validate_perf.py --fit      # re-fit, rewrite the shipped fit,
                                                       # then validate
    options: --csv PATH (default ../shared/calibration/measurements.csv), --workers N,
             --ray (start or join a local Ray), --ray-address ADDR (a Ray cluster),
             --out PATH (default examples/validation/perf_validation.md), --fit-every K,
             --rows PATH (every compared metric of every row as CSV, for slicing),
             --fit-runtime pytorch (keep the shipped C++-runtime fit: refit the
             PyTorch backend's general fit alone, around it)

Every row of the CSV is mapped to a `PredictSpec` and its measured metrics, or skipped with
a reason (`llmsizer.calibrate.measurements.load_measurements`). `--fit` fits the TensorRT-LLM
efficiency factors (`DEFAULT_FIT_FACTORS`, with the log-normal prior `PRIOR_SIGMA`) once per
runtime (`Measurement.runtime`): on every K-th mapped row of the C++ runtime (default 3:
simulating all rows takes ~15 min on two busy cores, a third ~5) from the TensorRT-LLM
priors, written to `src/llmsizer/calibrate/data/calibrated_trtllm_cpp.yaml` (what prices
those rows); then on every PyTorch-backend row it prices (the v1.0 table on GPUs without a
fit of their own: Hopper) around that fit, but with `PYTORCH_OWN_PRIORS` at the priors,
written to `src/llmsizer/perf/data/calibrated_trtllm.yaml`
(the engine's general fit: what `predict` and the AIC rows without a fit of their own use).
vLLM and SGLang have no rows in the set, so their files carry the C++ fit's kernel factors
over and keep their own step-overhead prior (said in each file's `fitted_on`). The
validation predicts every mapped row with the priors (`default_efficiency`) and with the
shipped fit as its runtime ran (`calibrate.validation.shipped_factors`), reports the rows
the fits used apart from the ones they did not, and writes the markdown report.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import sys
import time
from pathlib import Path

from llmsizer.calibrate.fit import FitResult
from llmsizer.calibrate.gpu_fit import (
    DEFAULT_FIT_FACTORS,
    PRIOR_SIGMA,
    calibration_file,
    fit_efficiency,
)
from llmsizer.calibrate.measurements import Measurement, load_measurements
from llmsizer.calibrate.validation import (
    BARS,
    CPP_RUNTIME_FILE,
    ValidationReport,
    cpp_runtime_calibration,
    validate_calibration_set,
)
from llmsizer.perf.calibrated import (
    CalibrationFile,
    packaged_architectures,
    packaged_calibration,
    save_calibration,
)
from llmsizer.perf.efficiency import EfficiencyFactors, EnginePreset, default_efficiency
from llmsizer.specs import get_gpu
from llmsizer.sweep import Sweep, open_sweep

REPO = Path(__file__).resolve().parents[1]
CSV = REPO.parent / "shared" / "calibration" / "measurements.csv"
DATA = REPO / "src" / "llmsizer" / "perf" / "data"
CALIBRATE_DATA = REPO / "src" / "llmsizer" / "calibrate" / "data"
OUT = REPO / "examples" / "validation" / "perf_validation.md"
KERNEL_FACTORS = tuple(f for f in DEFAULT_FIT_FACTORS if f != "step_overhead_s")
# The PyTorch backend's fit centres these on the priors, not on the C++ runtime's fit: the
# C++ runtime enqueues every kernel of a decode step (no CUDA graphs), and its launch gaps
# went into the weight-streaming bandwidth (docs/aic_measurement.md section 22); the v1.0
# table's offline rows barely see weight streaming, so the centre is what they leave it at.
PYTORCH_OWN_PRIORS = ("gemm_bandwidth_efficiency",)


def say(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def fit(csv_path: Path, every: int, workers: Sweep, pytorch_only: bool = False) -> None:
    """Fit the engine's two general fits (module docstring): the C++ runtime's on every K-th
    of its rows from the TensorRT-LLM priors, then the PyTorch backend's on all of its rows
    that it prices (GPUs without a fit of their own: Hopper) around the C++ fit, but for the
    factor the C++ runtime's launch gaps went into. `pytorch_only`: the shipped C++ fit is
    kept (and the vLLM / SGLang files it carries over to), only the PyTorch backend's refit."""
    data = load_measurements(csv_path)
    cpp = [m for m in data.measurements if m.runtime == "cpp"][::every]
    own = packaged_architectures(EnginePreset.TRTLLM)  # priced by their own (AIC) fits
    pytorch = [
        m
        for m in data.measurements
        if m.runtime == "pytorch" and get_gpu(m.spec.gpu).architecture not in own
    ]
    digest = hashlib.sha256(csv_path.read_bytes()).hexdigest()
    priors = default_efficiency(EnginePreset.TRTLLM)
    if pytorch_only:
        cpp_factors = cpp_runtime_calibration().efficiency()
    else:
        cpp_fit = _fit(cpp, priors, workers)
        cpp_factors = cpp_fit.factors
        rows = f"one mapped C++-runtime row in every {every}, in file order from the first "
        save_calibration(
            CALIBRATE_DATA / CPP_RUNTIME_FILE,
            calibration_file(cpp_fit, EnginePreset.TRTLLM, _fitted_on(
                cpp, digest, rows + f"({len(cpp)} of {len(data.measurements)} mapped; "
                f"{len(data.skipped)} skipped)", "the TensorRT-LLM priors", every)),
        )  # fmt: skip
    centre = cpp_factors.replace(**{f: getattr(priors, f) for f in PYTORCH_OWN_PRIORS})
    general = _fit(pytorch, centre, workers)
    centred = f"the C++ runtime's fit, {', '.join(PYTORCH_OWN_PRIORS)} at the priors"
    rows = f"every PyTorch-backend row it prices ({len(pytorch)}: the v1.0 table but on "
    rows += f"{', '.join(own)} GPUs, which their own fits price)"
    fitted_on = _fitted_on(pytorch, digest, rows, centred, every)
    if pytorch_only:
        fitted_on["produced_by"] = "bench/validate_perf.py --fit --fit-runtime pytorch"
    trtllm = calibration_file(general, EnginePreset.TRTLLM, fitted_on)
    save_calibration(DATA / "calibrated_trtllm.yaml", trtllm)
    if pytorch_only:
        return
    for engine in (EnginePreset.VLLM, EnginePreset.SGLANG):
        carried = {k: float(f"{getattr(cpp_factors, k):.4g}") for k in KERNEL_FACTORS}
        note = {
            "carried_over": f"kernel factors from {CPP_RUNTIME_FILE} (the C++ runtime's "
            f"general fit, as before the split): the calibration set has no {engine.value} "
            f"rows; step_overhead_s is the {engine.value} prior",
            "carried_factors": list(KERNEL_FACTORS),
        }
        file = CalibrationFile(
            kind="efficiency_factors", engine=engine, factors=carried, fitted_on=note
        )
        save_calibration(DATA / f"calibrated_{engine.value}.yaml", file)


def _fit(chosen: list[Measurement], start: EfficiencyFactors, workers: Sweep) -> FitResult:
    t0 = time.perf_counter()
    result = fit_efficiency(
        [m.case for m in chosen], start, prior_sigma=PRIOR_SIGMA, workers=workers, progress=say
    )
    say(f"fit: {time.perf_counter() - t0:.0f} s, {result.num_evaluations} evaluations")
    for name, value in result.factors.as_dict().items():
        say(f"  {name} = {value:.4g} (prior {getattr(start, name):.4g})")
    return result


def _fitted_on(
    chosen: list[Measurement], digest: str, rows: str, centre: str, every: int
) -> dict[str, str]:
    return {
        "data": "shared/calibration/measurements.csv",
        "sha256": digest,
        "rows": rows,
        "row_ids": " ".join(str(m.row_id) for m in chosen),
        "objective": "squared log error of every measured metric of every row, plus a "
        f"log-normal prior (sigma {PRIOR_SIGMA}) around {centre}",
        "produced_by": f"bench/validate_perf.py --fit --fit-every {every}",
    }


def write_rows(report: ValidationReport, path: Path) -> None:
    """One line per compared metric of a row: what it is, measured, predicted per factor set."""
    with path.open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["row", "source", "model", "gpu", "precision", "tp", "pp", "isl", "osl",
                      "metric", "measured", *report.factor_sets])  # fmt: skip
        for c in report.comparisons:
            m, s = c.measurement, c.measurement.spec
            predicted = [c.predicted[f] for f in report.factor_sets]
            out.writerow([m.row_id, m.source_id, s.model, s.gpu, s.precision,
                          s.tensor_parallel_size, s.pipeline_parallel_size, s.isl, s.osl,
                          c.metric, c.measured, *predicted])  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--csv", type=Path, default=CSV)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--ray", action="store_true", help="record the schedules on Ray")
    parser.add_argument("--ray-address", default=None, help="a Ray cluster to record on")
    parser.add_argument("--fit", action="store_true", help="re-fit and rewrite the shipped fit")
    parser.add_argument("--fit-every", type=int, default=3, help="fit on every K-th row")
    parser.add_argument(
        "--fit-runtime",
        choices=("both", "pytorch"),
        default="both",
        help="pytorch: keep the shipped C++-runtime fit, refit the PyTorch backend's only",
    )
    parser.add_argument("--rows", type=Path, default=None, help="write every comparison as CSV")
    args = parser.parse_args()
    with open_sweep(args.workers, ray=args.ray, ray_address=args.ray_address) as sweep:
        if args.fit:
            fit(args.csv, args.fit_every, sweep, pytorch_only=args.fit_runtime == "pytorch")
            packaged_calibration.cache_clear()  # read the files just written
            cpp_runtime_calibration.cache_clear()
        t0 = time.perf_counter()
        report = validate_calibration_set(args.csv, workers=sweep, progress=say)
    say(f"validation: {time.perf_counter() - t0:.0f} s")
    num_used = len({c.measurement.row_id for c in report.comparisons})
    preamble = PREAMBLE.format(
        num_rows=num_used + len(report.skipped),
        num_used=num_used,
        num_skipped=len(report.skipped),
    )
    text = report.to_markdown(preamble) + "\n" + NOTES
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text + "\n")
    print(text)
    if args.rows is not None:
        write_rows(report, args.rows)
    failed = [b.name for b in BARS if not report.bar_met(b, "fitted")]
    say("bars met" if not failed else f"bars not met: {failed}")


PREAMBLE = """Produced by `.venv/bin/python bench/validate_perf.py --fit` (from the repository root,
with `../shared/calibration/measurements.csv`): it fitted the factors on every third mapped
C++-runtime row and every PyTorch-backend row of that file, then predicted every mapped
row. Rows the fits did not use are reported apart below, but they come from the same
tables, so they are not an independent test: the published sets kept aside for independent
validation were not used.

Of the file's {num_rows} rows, {num_used} map to one configuration the model can simulate
and are compared; {num_skipped} are skipped (ratios, heuristics, GPUs or models outside the
catalog, ambiguous labels; listed at the end with the reason). Each row is simulated as
`llmsizer predict` would (same simulator, same summary), with:

- **default**: the unfitted priors (`default_efficiency(engine)`);
- **fitted**: the shipped fit of the row's runtime (`shipped_factors`): the C++ runtime's rows
  `src/llmsizer/calibrate/data/calibrated_trtllm_cpp.yaml`; the PyTorch backend's as `predict`
  prices them (`calibrated_for(spec)`: `src/llmsizer/perf/data/calibrated_trtllm.yaml`, or
  `calibrated_trtllm_blackwell.yaml` (fitted on the AIC silicon rows, `bench/fit_aic.py`) for
  Blackwell GPUs).

How rows become predictions: offline max-throughput rows are an offline burst of the
dataset size trtllm-bench used, with its engine limits (`trtllm_bench_settings`); the
online table's rows are Poisson arrivals of 500 requests at the QPS (QPS=INF: all at once)
and its ITL is compared with the mean TPOT (genai-perf's per-request inter-token latency);
static-batch rows are a closed loop at the batch size; batch-1 latency rows compare TTFT.
Each row runs as its runtime ran it (`runtime_settings`): the v1.0 table's trtllm-bench on
the PyTorch backend with padded CUDA graphs of its `llm_options.yml` sizes and the overlap
scheduler; the C++ runtime's rows without the overlap scheduler, decode steps at their size.
Errors are |predicted / measured - 1|; MdAPE and MAPE are their median and mean in %.
"""


NOTES = """
## What the worst rows have in common

Signed errors below are predicted / measured - 1 with the fitted factors.

- **Mistral 7B at 20000/2000 (+63 to +95 %, every GPU).** The catalog's Mistral 7B has the
  4096-token sliding window of its `config.json`, so the model prices prefill attention
  over at most 4096 keys; TensorRT-LLM's attention window defaults to the whole sequence
  unless `max_attention_window_size` is set, so it most likely attended to all 20000. The
  shorter Mistral rows (under 4096 tokens) are unaffected.
- **Late-2023 static-batch rows with grouped-query attention (Llama 2 70B, Falcon 180B in
  v0.6.1: median +40 %, up to +100 %; H200 launch blog: up to +166 %).** Those TensorRT-LLM
  versions decoded grouped-query attention with slower kernels: the set's Falcon-180B blog
  (row 760) reports "up to 2.4x" on Llama-70B from v0.5 to v0.7. The same tables' models
  with plain multi-head attention (GPT-J, Llama 2 7B) come out 12 % low, not high.
- **RTX PRO 6000 with 8 pipeline stages (median +41 %, up to +97 %).** The model runs `pp`
  batches in flight with no bubbles and sends activations over PCIe at its datasheet rate.
- **The online table's 202/214 rows at QPS=INF (throughput +62 %, ITL +37 %).** The other
  rows of that series fit; these lengths are probably a dataset's means rather than fixed
  lengths (the table gives no spread), and all 500 requests at once make spread matter most.
- **One set of factors for every GPU.** L40S (median +17 %) and Blackwell FP4 (B200, GB200:
  +13 %) run slower than Hopper relative to their datasheets, while H100 (-6 %), H200
  (-3 %) and GH200 (-10 %) come out low: the factors are per engine, not per GPU, and the
  Hopper rows are most of the data.
- **TTFT at low load:** the priors miss 4 to 13 ms per request in the online table; the fit
  puts it into `prefill_layer_overhead_s` (a step with prompt work is launched kernel by
  kernel, not replayed from a CUDA graph). Part of it is probably the serving path (HTTP,
  tokenisation) that no step cost holds.
"""


if __name__ == "__main__":
    main()
