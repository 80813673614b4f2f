"""Home Assistant's intent test sentences, run through the hassil stage and scored.

The suite is a copy of ``tests/en`` from home-assistant/intents: ``_fixtures.yaml`` is the
home; every other ``*.yaml`` holds ``tests:`` with sentences, the expected intent (name,
slots, optional ``context`` such as the area the satellite is in) and a response. Folders
named after an intent hold small files that bring their own home (``entities`` with a
``domain``, ``areas`` by name) and expect that intent.

Slots are compared like Home Assistant's harness (``tests/test_language_sentences.py``): a
list on either side means "one of"; ``strict`` also fails slots that the test did not
expect (their rule); the default only requires every expected slot to be present and right.
"""

from __future__ import annotations

import re
import statistics
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from voiced.api.intents import Intent

FIXTURES = "_fixtures.yaml"
CONTEXT_AREA = "Living Room"


@dataclass(frozen=True)
class Case:
    file: str
    sentence: str
    intent: str
    slots: dict[str, Any]
    context: dict[str, Any] = field(default_factory=dict)
    response: tuple[str, ...] = ()


@dataclass
class Suite:
    """Cases grouped by the home they assume."""

    groups: list[tuple[dict[str, Any], list[Case]]]

    def __len__(self) -> int:
        return sum(len(cases) for _, cases in self.groups)


@dataclass
class Outcome:
    case: Case
    got: Intent | None
    miss: str | None
    seconds: float


@dataclass
class Report:
    outcomes: list[Outcome]

    @property
    def passed(self) -> int:
        return sum(o.miss is None for o in self.outcomes)

    @property
    def rate(self) -> float:
        return self.passed / len(self.outcomes) if self.outcomes else 0.0

    def misses(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.miss is not None]

    def per_intent(self) -> dict[str, tuple[int, int]]:
        table: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for o in self.outcomes:
            table[o.case.intent][1] += 1
            table[o.case.intent][0] += o.miss is None
        return {k: (v[0], v[1]) for k, v in sorted(table.items())}

    def table(self) -> str:
        lines = [f"{'intent':32} {'pass':>5} {'total':>5} {'rate':>7}"]
        for name, (ok, total) in self.per_intent().items():
            lines.append(f"{name:32} {ok:5d} {total:5d} {ok / total:7.1%}")
        lines.append(f"{'ALL':32} {self.passed:5d} {len(self.outcomes):5d} {self.rate:7.1%}")
        times = sorted(o.seconds for o in self.outcomes)
        if times:
            p95 = times[min(len(times) - 1, int(len(times) * 0.95))]
            lines.append(
                f"recognition: median {statistics.median(times) * 1e3:.2f} ms, "
                f"p95 {p95 * 1e3:.2f} ms per sentence"
            )
        return "\n".join(lines)


def load_suite(folder: Path) -> Suite:
    """Read the fixtures and every test file under ``folder``."""
    fixtures = _read(folder / FIXTURES)
    main: list[Case] = []
    for path in sorted(folder.glob("*.yaml")):
        if path.name != FIXTURES:
            main.extend(_cases(path.name, _read(path)))
    groups: list[tuple[dict[str, Any], list[Case]]] = [(fixtures, main)]
    for path in sorted(folder.glob("*/*.yaml")):
        data = _read(path)
        name = f"{path.parent.name}/{path.name}"
        home = _small_home(data)
        context = {}
        if re.search(r"^#\s*context_area:\s*true", path.read_text(encoding="utf-8"), re.M):
            # "turn on the lights in here": the satellite's area comes from the context
            context = {"area": CONTEXT_AREA}
            home["areas"].append({"name": CONTEXT_AREA, "id": _slug(CONTEXT_AREA)})
        cases = [
            Case(name, sentence, path.parent.name, dict(test.get("slots") or {}), context)
            for test in data.get("tests") or []
            for sentence in test.get("sentences") or []
        ]
        if cases:
            groups.append((home, cases))
    return Suite(groups)


def run_suite(recognizer: Any, suite: Suite, strict: bool = False) -> Report:
    """Feed every sentence to a loaded ``HassilIntent``; its home is swapped per group."""
    outcomes = []
    for home, cases in suite.groups:
        recognizer.use_home(home)
        for case in cases:
            started = time.perf_counter()
            got = recognizer.recognize(case.sentence, case.context)
            seconds = time.perf_counter() - started
            outcomes.append(Outcome(case, got, compare(got, case, strict), seconds))
    return Report(outcomes)


def compare(got: Intent | None, case: Case, strict: bool = False) -> str | None:
    """None when ``got`` is what the case expects, else why not."""
    if got is None:
        return "no match"
    if got.name != case.intent:
        return f"intent {got.name}"
    for name, want in case.slots.items():
        if name not in got.slots:
            return f"missing slot {name}={want!r}"
        if not _slot_ok(got.slots[name], want):
            return f"slot {name}={got.slots[name]!r}, expected {want!r}"
    if strict:
        extra = sorted(set(got.slots) - set(case.slots))
        if extra:
            return "unexpected slot " + ", ".join(f"{k}={got.slots[k]!r}" for k in extra)
    return None


RESPONSES_NEED = re.compile(r"Timer|HassGetCurrent|HassNevermind|HassMediaSearchAndPlay")
"""Answers that depend on the fixtures' timers, a fixed test clock or a media library."""


@dataclass
class ResponseCheck:
    case: Case
    said: str | None

    @property
    def ok(self) -> bool:
        return self.said in self.case.response


def check_responses(recognizer: Any, responder: Any, suite: Suite) -> list[ResponseCheck]:
    """Speak HA's answer (``responses`` handler) for every recognized sentence of the main
    files that expects one, against the fixtures' entity states."""
    from voiced.api.app import RunContext

    home, cases = suite.groups[0]
    recognizer.use_home(home)
    checks = []
    for case in cases:
        if not case.response or RESPONSES_NEED.search(case.intent):
            continue
        got = recognizer.recognize(case.sentence, case.context)
        if compare(got, case) is not None:
            continue  # recognition misses are counted by run_suite
        answer = responder.voiced_handle(got, RunContext())
        checks.append(ResponseCheck(case, answer.speech if answer else None))
    return checks


def sentences(suite: Suite) -> Iterator[tuple[dict[str, Any], Case]]:
    for home, cases in suite.groups:
        for case in cases:
            yield home, case


def _slot_ok(value: Any, want: Any) -> bool:
    if isinstance(want, list):
        return set(want).issubset(value) if isinstance(value, list) else value in want
    if isinstance(value, list):
        return want in value
    if isinstance(want, (int, float)) and isinstance(value, (int, float)):
        return float(want) == float(value)
    return str(value) == str(want)


def _cases(file: str, data: dict[str, Any]) -> Iterator[Case]:
    for test in data.get("tests") or []:
        intent = test.get("intent") or {}
        for sentence in test.get("sentences") or []:
            response = test.get("response")
            responses = (response,) if isinstance(response, str) else tuple(response or ())
            yield Case(
                file, sentence, intent["name"], dict(intent.get("slots") or {}),
                dict(intent.get("context") or {}), responses,
            )  # fmt: skip


def _small_home(data: dict[str, Any]) -> dict[str, Any]:
    """The per-file homes name areas and entity domains only; give them ids."""
    areas = [{"name": a["name"], "id": _slug(a["name"])} for a in data.get("areas") or []]
    entities = [
        {"name": e["name"], "id": f"{e.get('domain', 'sensor')}.{_slug(e['name'])}",
         "state": str(e.get("state", ""))}
        for e in data.get("entities") or []
    ]  # fmt: skip
    return {"areas": areas, "entities": entities}


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", name.casefold()).strip("_")


def _read(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text(encoding="utf-8")) or {}
