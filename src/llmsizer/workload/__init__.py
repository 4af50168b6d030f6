"""Workloads: when requests arrive and how long their prompts and outputs are.

A `Workload` is plain arrays, one entry per request, shared by the simulator and the
benchmark client. Build one from a `WorkloadSpec` with `make_workload`, from a trace file with
`read_trace`, or directly from the samplers in `arrivals` and `lengths`.
"""

from llmsizer.workload.arrivals import burst_arrivals, gamma_arrivals, poisson_arrivals
from llmsizer.workload.build import make_workload
from llmsizer.workload.core import Workload
from llmsizer.workload.lengths import (
    empirical_lengths,
    fixed_lengths,
    lognormal_lengths,
    normal_lengths,
    uniform_lengths,
)
from llmsizer.workload.spec import LengthSpec, WorkloadSpec, fixed_length_load
from llmsizer.workload.traces import (
    TraceError,
    detect_trace_format,
    read_azure_csv,
    read_mooncake_jsonl,
    read_trace,
)

__all__ = [
    "LengthSpec",
    "TraceError",
    "Workload",
    "WorkloadSpec",
    "burst_arrivals",
    "detect_trace_format",
    "empirical_lengths",
    "fixed_length_load",
    "fixed_lengths",
    "gamma_arrivals",
    "lognormal_lengths",
    "make_workload",
    "normal_lengths",
    "poisson_arrivals",
    "read_azure_csv",
    "read_mooncake_jsonl",
    "read_trace",
    "uniform_lengths",
]
