"""Multi-room wake de-duplication: one wake word heard in several rooms starts one run."""

from __future__ import annotations

import asyncio

import pytest

from voiced.arbiter import ArbiterConfig, WakeArbiter
from voiced.events import Event, EventType
from voiced.stages import WakeDetection


class Clock:
    """Claim times set by the test: the arbiter's notion of 'when each room heard it'."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def arbiter(**config: object) -> tuple[WakeArbiter, list[Event], Clock]:
    events: list[Event] = []
    clock = Clock()
    return WakeArbiter(ArbiterConfig(**config), events.append, clock), events, clock


def jarvis(score: float = 0.9, **data: object) -> WakeDetection:
    return WakeDetection("hey_jarvis", score, dict(data))


async def test_earliest_site_wins_and_the_later_one_is_told_why():
    arb, events, clock = arbiter(policy="earliest", window=0.3)
    assert await arb.claim("kitchen", jarvis())
    clock.now += 0.1
    assert not await arb.claim("living-room", jarvis(score=0.99))
    assert [e.type for e in events] == [EventType.WAKE_IGNORED]
    ignored = events[0]
    assert ignored.site_id == "living-room"
    assert ignored.data["winner"] == "kitchen"
    assert ignored.data["policy"] == "earliest"
    assert ignored.data["delay_s"] == pytest.approx(0.1)
    assert "kitchen" in ignored.data["reason"] and "earlier" in ignored.data["reason"]


async def test_detections_further_apart_than_the_window_both_run():
    arb, events, clock = arbiter(window=0.3)
    assert await arb.claim("kitchen", jarvis())
    clock.now += 0.5
    assert await arb.claim("living-room", jarvis())
    assert events == []


async def test_different_wake_words_at_once_are_different_people():
    arb, events, clock = arbiter(window=0.3)
    assert await arb.claim("kitchen", jarvis())
    clock.now += 0.05
    assert await arb.claim("office", WakeDetection("alexa", 0.9))
    assert events == []


async def test_any_word_matching_makes_every_wake_word_compete():
    arb, events, clock = arbiter(window=0.3, match="any-word")
    assert await arb.claim("kitchen", jarvis())
    clock.now += 0.05
    assert not await arb.claim("office", WakeDetection("alexa", 0.9))
    assert events[0].data["winner"] == "kitchen"


async def test_loudest_site_wins_even_when_it_heard_the_word_later():
    arb, events, clock = arbiter(policy="loudest", window=0.2)

    async def later(site: str, score: float) -> bool:
        await asyncio.sleep(0.05)
        clock.now += 0.05
        return await arb.claim(site, jarvis(score))

    far, near = await asyncio.gather(arb.claim("hallway", jarvis(0.6)), later("kitchen", 0.97))
    assert (far, near) == (False, True)
    assert [(e.type, e.site_id) for e in events] == [(EventType.WAKE_IGNORED, "hallway")]
    assert events[0].data["winner"] == "kitchen"
    assert "louder" in events[0].data["reason"]


async def test_loudest_breaks_score_ties_with_reported_energy():
    arb, _events, clock = arbiter(policy="loudest", window=0.2)

    async def later(site: str) -> bool:
        await asyncio.sleep(0.05)
        clock.now += 0.05
        return await arb.claim(site, jarvis(0.9, energy=0.8))

    first, second = await asyncio.gather(
        arb.claim("hallway", jarvis(0.9, energy=0.1)), later("kitchen")
    )
    assert (first, second) == (False, True)


async def test_a_lone_site_in_loudest_mode_still_runs():
    arb, events, _ = arbiter(policy="loudest", window=0.05)
    assert await arb.claim("kitchen", jarvis())
    assert events == []


async def test_disabled_arbiter_lets_every_site_run():
    arb, events, clock = arbiter(enabled=False)
    assert await arb.claim("kitchen", jarvis())
    clock.now += 0.01
    assert await arb.claim("living-room", jarvis())
    assert events == []


async def test_a_new_round_starts_after_the_window():
    arb, events, clock = arbiter(window=0.3)
    assert await arb.claim("kitchen", jarvis())
    clock.now += 0.1
    assert not await arb.claim("office", jarvis())
    clock.now += 2.0  # the person asks again, this time from the office
    assert await arb.claim("office", jarvis())
    clock.now += 0.1
    assert not await arb.claim("kitchen", jarvis())
    assert [e.data["winner"] for e in events] == ["kitchen", "office"]


async def test_a_claim_counts_when_its_audio_was_heard_not_when_its_detector_ran():
    arb, events, clock = arbiter(policy="earliest", window=0.3)
    heard = clock.now
    assert await arb.claim("kitchen", jarvis(), heard)
    clock.now += 0.9  # a busy server: the office's detector runs 0.8 s behind its audio
    assert not await arb.claim("office", jarvis(), heard + 0.1)
    assert events[0].data["winner"] == "kitchen"
    assert events[0].data["delay_s"] == pytest.approx(0.1)


async def test_the_room_whose_detector_ran_first_wins_and_the_other_is_told_it_heard_first():
    arb, events, clock = arbiter(policy="earliest", window=0.3)
    heard = clock.now
    clock.now += 0.5
    assert await arb.claim("office", jarvis(), heard + 0.1)  # its detector was quicker
    clock.now += 0.2
    assert not await arb.claim("kitchen", jarvis(), heard)
    reason = events[0].data["reason"]
    assert events[0].data["winner"] == "office"
    assert "claimed" in reason and "0.100 s later" in reason


async def test_the_same_wake_word_heard_again_after_the_window_is_a_new_round_however_late():
    arb, events, clock = arbiter(policy="earliest", window=0.3)
    heard = clock.now
    assert await arb.claim("kitchen", jarvis(), heard)
    clock.now += 3.0
    assert await arb.claim("kitchen", jarvis(), heard + 2.0)  # asked again, detector behind
    assert events == []


def test_config_rejects_an_unknown_policy_by_name():
    with pytest.raises(ValueError, match="policy"):
        ArbiterConfig(policy="random")


async def test_a_louder_room_whose_detector_ran_after_the_round_is_told_so():
    arb, events, clock = arbiter(policy="loudest", window=0.2)
    heard = clock.now
    assert await arb.claim("kitchen", jarvis(0.7), heard)
    clock.now += 1.0  # the office's detector, far behind its audio, after the round
    assert not await arb.claim("office", jarvis(0.95), heard + 0.05)
    assert events[0].data["winner"] == "kitchen"
    assert "before this site's detector" in events[0].data["reason"]
