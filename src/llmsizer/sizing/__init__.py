"""Sizing: from a configuration and load to latency and throughput, and to GPU counts."""

from llmsizer.sizing.instance import Instance, make_instance
from llmsizer.sizing.predict import Prediction, PredictSpec, predict

__all__ = ["Instance", "PredictSpec", "Prediction", "make_instance", "predict"]
