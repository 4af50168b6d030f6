"""Sizing: from a use case to GPUs, servers and cost (`plan`), with the latency-throughput
trade-off behind the answer. One deployment's prediction lives in `llmsizer.instance`."""

from llmsizer.sizing.plan import plan
from llmsizer.sizing.plan_data import plan_data
from llmsizer.sizing.result import PlanResult
from llmsizer.sizing.usecase import UseCase

__all__ = ["PlanResult", "UseCase", "plan", "plan_data"]
