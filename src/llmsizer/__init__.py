"""llmsizer: how many GPUs, of which kind, configured how, to serve an LLM within latency limits.

The public API. `specs -> perf -> sim -> sizing`, with `bench` beside `sim`; `records` and
`metrics` are shared by the simulator and the benchmark client.
"""

from llmsizer.instance import DeploymentSpec, PredictSpec, make_instance, predict
from llmsizer.metrics import Slo, summarize
from llmsizer.records import RequestRecord
from llmsizer.sim import Batch, Engine, EngineConfig, FixedTicks, LinearStepCost, simulate
from llmsizer.workload import Workload, WorkloadSpec, make_workload

__version__ = "0.1.0"

__all__ = [
    "Batch",
    "DeploymentSpec",
    "Engine",
    "EngineConfig",
    "FixedTicks",
    "LinearStepCost",
    "PredictSpec",
    "RequestRecord",
    "Slo",
    "Workload",
    "WorkloadSpec",
    "__version__",
    "make_instance",
    "make_workload",
    "predict",
    "simulate",
    "summarize",
]
