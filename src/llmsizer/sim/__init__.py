"""The serving-engine simulator: requests, KV blocks, batching policies, the event loop."""

from llmsizer.sim.batch import Batch, PrefillChunk, StepCost
from llmsizer.sim.config import PRESETS, EngineConfig
from llmsizer.sim.engine import Engine, simulate
from llmsizer.sim.result import SimResult, StepLog
from llmsizer.sim.step_costs import FixedTicks, LinearStepCost

__all__ = [
    "PRESETS",
    "Batch",
    "Engine",
    "EngineConfig",
    "FixedTicks",
    "LinearStepCost",
    "PrefillChunk",
    "SimResult",
    "StepCost",
    "StepLog",
    "simulate",
]
