"""Jobs: one per input, off the caller's thread, cancellable, dropped when abandoned, and two
at once run side by side."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from llmsizer.serve import jobs as jobs_module
from llmsizer.serve.jobs import Jobs, State, first_stage
from llmsizer.sizing.usecase import UseCase

BASE = {
    "model": "llama-3-8b",
    "input": {"user": 2000},
    "output": 200,
    "load": {"peak_rps": 50},
    "candidates": {"gpus": ["h100-sxm"], "tensor_parallel_sizes": [1, 2]},
    "search": {"num_requests": 400},
}


def usecase(ttft_ms: float) -> UseCase:
    return UseCase.model_validate({**BASE, "limits": {"ttft_ms": ttft_ms}})


@pytest.fixture
def jobs() -> Iterator[Jobs]:
    table = Jobs()
    yield table
    table.close()


def wait_polling(jobs: Jobs, job_id: str) -> None:
    """Poll as a page does (keeps the job from being abandoned)."""
    end = time.monotonic() + 300
    while (job := jobs.get(job_id)) is not None and not job.finished:
        assert time.monotonic() < end
        time.sleep(0.05)


def test_the_same_input_is_the_same_job_and_its_answer_comes_first(jobs: Jobs) -> None:
    job = jobs.submit(usecase(300))
    assert jobs.submit(usecase(300)) is job
    wait_polling(jobs, job.id)
    assert job.state is State.DONE, job.error
    assert job.answer is not None and job.data is not None and job.answer_s is not None
    assert job.answer["candidates"][0]["sizing"] == job.data["candidates"][0]["sizing"]
    assert job.answer["band"] is None and job.data["band"] is not None
    assert job.answer["timeline"] is None and job.data["timeline"] is not None


def test_two_jobs_run_side_by_side(jobs: Jobs) -> None:
    a, b = jobs.submit(usecase(300)), jobs.submit(usecase(200))
    end = time.monotonic() + 300
    both_running = False
    while not (a.finished and b.finished):
        assert time.monotonic() < end
        jobs.get(a.id), jobs.get(b.id)
        both_running |= a.state is State.RUNNING and b.state is State.RUNNING
        time.sleep(0.01)
    assert both_running
    assert a.state is b.state is State.DONE


def test_cancel_stops_a_job(jobs: Jobs) -> None:
    job = jobs.submit(usecase(300))
    jobs.cancel(job.id)
    wait_polling(jobs, job.id)
    assert job.state is State.CANCELLED and job.data is None
    again = jobs.submit(usecase(300))  # a cancelled job is planned again when asked
    assert again is not job


def test_a_cancel_after_the_plans_last_checkpoint_still_cancels(
    jobs: Jobs, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The click can land after the plan's last progress call (curves, the band): the job
    ends cancelled, its result dropped, not done (the browser's cancel test waited forever)."""
    real = jobs_module.plan
    submitted: list[str] = []

    def plan_then_click(*args: object, **kwargs: object) -> object:
        result = real(*args, **kwargs)  # type: ignore[arg-type]
        if not kwargs.get("quick"):
            jobs.cancel(submitted[0])  # after every checkpoint of the full plan
        return result

    monkeypatch.setattr(jobs_module, "plan", plan_then_click)
    job = jobs.submit(usecase(300))
    submitted.append(job.id)
    wait_polling(jobs, job.id)
    assert job.state is State.CANCELLED and job.data is None and job.result is None


def test_a_job_nobody_polls_is_abandoned(jobs: Jobs, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jobs_module, "ABANDON_S", 0.0)
    job = jobs.submit(usecase(250))
    assert jobs.wait(job, 300)  # `wait` polls too, so ask without it:
    assert job.state in (State.DONE, State.CANCELLED)
    monkeypatch.setattr(jobs_module, "ABANDON_S", 0.0)
    quiet = jobs.submit(usecase(260))
    time.sleep(0.01)
    end = time.monotonic() + 300
    while not quiet.finished:
        assert time.monotonic() < end
        time.sleep(0.05)
    assert quiet.state is State.CANCELLED


def test_a_failed_plan_is_a_message(jobs: Jobs, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(jobs_module, "plan", broken)
    job = jobs.submit(usecase(300))
    jobs.wait(job, 60)
    assert job.state is State.FAILED
    assert job.error == "internal error (RuntimeError): a bug"


def test_the_first_stage_skips_only_the_curves() -> None:
    first = first_stage(usecase(300))
    assert first.search.curves is False
    assert first.model_copy(update={"search": usecase(300).search}) == usecase(300)


def test_a_page_that_moves_on_cancels_its_last_job_unless_another_waits(jobs: Jobs) -> None:
    a = jobs.submit(usecase(300), tab="one")
    b = jobs.submit(usecase(200), tab="one")  # the page changed a field
    assert a.cancel_event.is_set() and not b.cancel_event.is_set()
    shared = jobs.submit(usecase(250), tab="one")
    assert jobs.submit(usecase(250), tab="two") is shared
    jobs.submit(usecase(240), tab="one")
    assert not shared.cancel_event.is_set()  # page two still waits for it
    assert b.cancel_event.is_set()
    back = jobs.submit(usecase(200), tab="one")  # the page went back before b stopped
    assert back is not b and not back.cancel_event.is_set()


def test_a_cancel_from_a_page_stops_the_job_it_shows_and_the_one_it_now_waits_for(
    jobs: Jobs,
) -> None:
    """The page still shows job `a` while the use case typed just before the click has
    reached the server as job `b`: the click stops both (the browser's cancel test clicked
    an older job's button and waited for a plan that ran on)."""
    a = jobs.submit(usecase(300), tab="one")
    b = jobs.submit(usecase(200), tab="one")
    other = jobs.submit(usecase(250), tab="two")
    assert jobs.cancel(a.id, tab="one") is a
    assert a.cancel_event.is_set() and b.cancel_event.is_set()
    assert not other.cancel_event.is_set()  # another page's plan runs on
    lone = jobs.submit(usecase(240))
    jobs.cancel(lone.id, tab="never-seen")  # a page the table does not know: just the job
    assert lone.cancel_event.is_set() and not other.cancel_event.is_set()
