import pytest

from llmsizer.perf.step import StepModel
from tests.perf.conftest import make_step_model


@pytest.fixture
def llama8b() -> StepModel:
    return make_step_model()
