"""Sizing: from a configuration and load to latency and throughput (`predict`), and from a
use case to GPUs, servers and cost (`plan`)."""

from llmsizer.sizing.instance import Instance, make_instance
from llmsizer.sizing.plan import PlanResult, plan
from llmsizer.sizing.plan_data import plan_data
from llmsizer.sizing.predict import Prediction, PredictSpec, predict
from llmsizer.sizing.usecase import UseCase

__all__ = [
    "Instance",
    "PlanResult",
    "PredictSpec",
    "Prediction",
    "UseCase",
    "make_instance",
    "plan",
    "plan_data",
    "predict",
]
