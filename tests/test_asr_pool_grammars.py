"""A worker's home grammars (asr_pool/grammars.py): built once per digest in the background,
looked up by jobs; while a front end's new home is being built, its previous one serves."""

from __future__ import annotations

import copy
import threading
import time

import pytest
from home_stages import home_hassil
from voiced_plugins.asr_pool.grammars import WorkerGrammars
from voiced_plugins.asr_pool.wire import GrammarMessage
from voiced_plugins.intent_hassil.portable import grammar_data

TOPIC = "voiced/asr-pool/grammar/f1/en"


@pytest.fixture
def grammars():
    made = WorkerGrammars(4 * 1024 * 1024, kept=4)
    stop = threading.Event()
    made.start(stop)
    yield made
    stop.set()


def built(grammars: WorkerGrammars, digest: str, source: str = TOPIC) -> tuple:
    deadline = time.monotonic() + 60
    while (found := grammars.lookup(digest, source))[1] != "used":
        assert time.monotonic() < deadline, found[1]
        time.sleep(0.05)
    return found


def test_while_a_new_home_is_built_the_front_ends_previous_one_serves(grammars):
    data = grammar_data(home_hassil())
    changed = copy.deepcopy(data)
    changed["home"]["areas"].append({"id": "attic", "name": "Attic"})
    first, second = GrammarMessage.of(data, "en"), GrammarMessage.of(changed, "en")
    assert grammars.lookup(first.digest, TOPIC) == (None, "unknown")

    grammars.offer(TOPIC, first.encode())
    assert grammars.lookup(first.digest, TOPIC) == (None, "building")
    home, _ = built(grammars, first.digest)
    assert home.is_command("turn on the kitchen lights")

    grammars.offer(TOPIC, second.encode())
    assert grammars.lookup(second.digest, TOPIC) == (
        home,
        f"previous {first.digest[:12]}: building",
    )
    assert grammars.lookup(second.digest, "voiced/asr-pool/grammar/f2/en") == (None, "building")
    new, _ = built(grammars, second.digest)
    assert new.is_command("turn on the lights in the attic")
    assert not home.is_command("turn on the lights in the attic")
    grammars.offer(TOPIC, second.encode())  # retained again (a reconnect): not built twice
    assert grammars.lookup(second.digest, TOPIC) == (new, "used")
    assert grammars.lookup(None) == (None, "none")
