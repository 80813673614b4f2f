"""A run: one owner, one end, cancel by phase, timed stage calls; a site's state from its runs."""

from __future__ import annotations

import asyncio

import pytest
from wyoming_assistant import ScriptedAsr, SmallAssistant

from voiced.intents import Intent, Transcript
from voiced.run import Phase, Run, StageFailed
from voiced.site_runs import SiteRuns


@pytest.fixture
def app():
    assistant = SmallAssistant(
        ScriptedAsr("what time is it", hang=2.0),
        intents={"turn on the light": Intent("HassTurnOn")},
        handles={"HassTurnOn": "Done."},
        stage_timeout=0.3,
    )
    yield assistant
    assistant.asr.loaded[0][1].released.set()
    assistant.close()


def test_a_run_ends_once_whoever_ends_it(app):
    run = app.start_run("kitchen", "wake")
    assert run.end("no-speech") is True
    assert run.end("error") is False and run.cancel() is False
    assert [(str(e.type), e.data) for e in app.events if e.run_id == run.run_id] == [
        ("run-start", {"reason": "wake"}),
        ("run-end", {"reason": "no-speech"}),
    ]


def test_cancelling_a_listening_run_ends_it_with_the_reason(app):
    run = app.start_run("kitchen", "wake")
    run.cancel("barge-in")
    assert run.ended and app.of("run-end")[0].data == {"reason": "barge-in"}


def test_a_queued_run_cancelled_ends_when_it_is_picked_up(app):
    run = app.start_run("kitchen", "speech", phase=Phase.THINKING)
    assert run.cancel("barge-in") is True and not run.ended
    assert run.end_if_cancelled() and app.of("run-end")[0].data == {"reason": "barge-in"}


async def test_an_answering_run_cancelled_stops_its_task(app):
    run = app.start_run("kitchen", "speech", phase=Phase.THINKING)
    task = run.answer_in(asyncio.ensure_future(asyncio.sleep(10)))
    run.cancel("barge-in")
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_a_stage_past_the_timeout_is_an_error_event_of_the_run(app):
    run = app.start_run("kitchen", "speech", phase=Phase.THINKING)
    with pytest.raises(StageFailed, match=r"asr failed: asr timed out after 0\.3 s"):
        await run.transcribe(b"\x00\x00" * 1600)
    [error] = app.of("error")
    assert (error.run_id, error.data["stage"]) == (run.run_id, "asr")


async def test_answer_recognizes_then_handles_or_says_it_did_not_understand(app):
    run = app.start_run("kitchen", "speech", phase=Phase.THINKING)
    assert (await run.answer(Transcript("turn on the light"))).speech == "Done."
    other = app.start_run("kitchen", "speech", phase=Phase.THINKING)
    missed = await other.answer(Transcript("sing"))
    assert (missed.speech, missed.handler) == (
        app.settings.pipeline.not_understood,
        "not-understood",
    )
    assert app.run_of(run.run_id) == ["run-start", "intent", "handled"]


def test_a_sites_state_follows_its_runs_and_says_if_it_is_muted(app):
    site = SiteRuns("porch", app.emit, muted=True)
    first = site.adopt(Run(app, "porch")).start("wake")
    second = site.adopt(Run(app, "porch", phase=Phase.THINKING)).start("speech")
    first.set_phase(Phase.SPEAKING)
    first.end("done")
    second.end("error")
    states = [(e.data["state"], e.data["muted"]) for e in app.of("state")]
    assert states == [
        ("idle", True),
        ("listening", True),
        ("thinking", True),
        ("speaking", True),
        ("thinking", True),
        ("idle", True),
    ]
