import pytest

from llmsizer.perf.deployment import Deployment
from llmsizer.perf.efficiency import EfficiencyFactors
from llmsizer.perf.step import StepModel


def make_step_model(
    model: str = "llama-3.1-8b",
    gpu: str = "h100-sxm",
    precision: str = "bf16",
    efficiency: EfficiencyFactors | None = None,
    **deployment_kwargs,
) -> StepModel:
    """A step model from catalog names; efficiency defaults to the dataclass defaults."""
    deployment = Deployment.from_names(model, gpu, precision, **deployment_kwargs)
    return StepModel(deployment, efficiency or EfficiencyFactors())


@pytest.fixture
def llama8b() -> StepModel:
    return make_step_model()
