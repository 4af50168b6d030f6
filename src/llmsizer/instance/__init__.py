"""The one join of the performance model and the simulator.

A `DeploymentSpec` (model, GPU, parallelism, precisions, engine and its scheduler settings)
becomes an `Instance` by `make_instance`: the step cost, the memory plan and the engine
configuration with its KV blocks. `predict` simulates a `PredictSpec` (a deployment under a
load); `simulation_setup` is what it simulates, shared with calibration.
"""

from llmsizer.instance.deployment import DeploymentSpec, HardwareSpec
from llmsizer.instance.instance import (
    Instance,
    calibrated_for,
    check_context,
    make_instance,
    measured_uncertainty,
    virtual_engine,
)
from llmsizer.instance.predict import Prediction, predict
from llmsizer.instance.setup import PredictSpec, SimulationSetup, simulation_setup

__all__ = [
    "DeploymentSpec",
    "HardwareSpec",
    "Instance",
    "PredictSpec",
    "Prediction",
    "SimulationSetup",
    "calibrated_for",
    "check_context",
    "make_instance",
    "measured_uncertainty",
    "predict",
    "simulation_setup",
    "virtual_engine",
]
