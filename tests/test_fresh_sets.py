"""The fresh evaluation sets (benchmarks/fresh.py): each seed a new home, commands and
conditions, the same every time it is drawn, its expected intents those of its own home."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks import fresh

SEED = 424242  # a test seed: never one of the benchmark's


@pytest.fixture(scope="module")
def drawn() -> dict:
    return fresh.draw(SEED)


@pytest.fixture(scope="module")
def stage(drawn):
    return fresh.hassil_stage(drawn["home"])


def test_a_seed_draws_the_same_set_every_time_and_another_seed_another(drawn):
    assert fresh.draw(SEED) == drawn
    other = fresh.draw(SEED + 1)
    assert other["home"] != drawn["home"]
    assert {i["text"] for i in other["items"]} != {i["text"] for i in drawn["items"]}


def test_a_set_has_enough_commands_chatter_and_silence(drawn):
    kinds = [item["kind"] for item in drawn["items"]]
    assert kinds.count("command") >= 60
    assert kinds.count("chatter") + kinds.count("no-speech") >= 15
    assert kinds.count("no-speech") >= 1


def test_every_expected_intent_acts_on_the_drawn_homes_own_devices(drawn, stage):
    ids = {entity["id"] for entity in drawn["home"]["entities"]}
    for item in drawn["items"]:
        if item["kind"] != "command":
            continue
        assert set(item["expected"]["entities"]) <= ids, item
        assert fresh.expected(stage, item["template_text"]) == item["expected"]
        assert item["text"].endswith(item["template_text"]) or item["phrasing"] != "{}"


def test_chatter_names_the_homes_devices_and_is_no_command_there(drawn, stage):
    names = [e["name"].lower() for e in drawn["home"]["entities"]]
    chatter = [item["text"] for item in drawn["items"] if item["kind"] == "chatter"]
    assert any(name in line for line in chatter for name in names)
    assert all(stage.recognize(line) is None for line in chatter)


def test_commands_come_from_home_assistants_templates_and_from_how_people_say_them(drawn):
    sources = {item.get("source") for item in drawn["items"] if item["kind"] == "command"}
    assert sources == {"template", "spoken"}
    assert any(item.get("phrasing", "{}") != "{}" for item in drawn["items"])


def test_a_command_is_written_as_it_is_said():
    # Home Assistant's timer templates write "1/2" for "half"; a voice reads it "one slash two"
    commands = [i["text"] for i in fresh.draw(31284)["items"] if i["kind"] == "command"]
    assert "start an 17 and a half minute timer" in commands
    assert not any("/" in text for text in commands)
    assert fresh.said_as("timer for 1/2 an hour") == "timer for half an hour"


def test_the_conditions_cover_voices_noise_rooms_telephones_and_tempo(drawn):
    spoken = [item for item in drawn["items"] if item["kind"] != "no-speech"]
    engines = {fresh.engine_of(item["voice"]) for item in spoken}
    assert {"espeak-ng", "piper"} <= engines
    assert {20.0, 10.0} <= {item["snr_db"] for item in spoken}
    assert any(item["reverb_s"] for item in spoken)
    assert any(item["telephone"] and item["rate"] == 8000 for item in spoken)
    assert any(item["tempo"] != 1.0 for item in spoken)


def test_a_rendering_is_the_same_every_time():
    condition = fresh.Condition("en-us", 175, 10.0, 0.4, True, 1.1, 8000, 1)
    first = fresh.render("turn on the moon lamp", condition, seed=7)
    assert np.array_equal(first, fresh.render("turn on the moon lamp", condition, seed=7))
    assert first.shape[1] == 1 and len(first) > 8000 * 1.0  # speech and its silence, at 8 kHz
