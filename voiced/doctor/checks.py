"""The checklist's data: one :class:`Check` per line, the :class:`Report`, and its text."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

SECTIONS = (
    "config", "python", "gpu", "engines", "audio", "mqtt", "models", "languages", "plugins",
)  # fmt: skip
MARKS = {True: "✓", False: "✗", None: "!"}


@dataclass
class Check:
    """One line of the checklist."""

    name: str
    ok: bool | None  # True: fine; False: broken; None: a warning (works, but see detail)
    detail: str = ""
    fix: str = ""
    required: bool = False  # a failed required check makes `voiced doctor` exit non-zero
    section: str = "plugins"

    @property
    def mark(self) -> str:
        """The checklist mark: ✓, ✗ or !."""
        return MARKS[self.ok]

    @property
    def status(self) -> str:
        """``ok``, ``fail`` or ``warn``."""
        return {True: "ok", False: "fail", None: "warn"}[self.ok]

    def to_dict(self) -> dict[str, Any]:
        """The fields and the status, for ``--json``."""
        return {**asdict(self), "status": self.status}


@dataclass
class Report:
    """The checks of one run and the facts they were judged on."""

    checks: list[Check]
    facts: dict[str, Any]

    @property
    def failed_required(self) -> list[Check]:
        """The required checks that failed (non-empty: exit 1)."""
        return [c for c in self.checks if c.ok is False and c.required]

    def to_dict(self) -> dict[str, Any]:
        """Verdict, counts, checks and facts, for ``--json``."""
        counts = {s: sum(1 for c in self.checks if c.status == s) for s in ("ok", "warn", "fail")}
        return {
            "ok": not self.failed_required,
            "counts": counts,
            "checks": [c.to_dict() for c in self.checks],
            "facts": self.facts,
        }


TITLES = {
    "config": "Configuration",
    "python": "Python and packages",
    "gpu": "GPU (torch)",
    "engines": "Engines",
    "audio": "Audio",
    "mqtt": "MQTT",
    "models": "Models",
    "languages": "Languages",
    "plugins": "Plugins",
}


def render(report: Report) -> str:
    """The checklist as text, a section title before each group."""
    lines: list[str] = []
    section = None
    for check in report.checks:
        if check.section != section:
            section = check.section
            lines.append(("" if not lines else "\n") + TITLES.get(section, section))
        lines.append(f"  {check.mark} {check.name}: {check.detail}".rstrip(": "))
        if check.fix and check.ok is not True:
            lines.append(f"      fix: {check.fix}")
    counts = report.to_dict()["counts"]
    verdict = (
        "required checks failed: " + ", ".join(c.name for c in report.failed_required)
        if report.failed_required
        else "voiced can run"
    )
    lines.append(
        f"\n{counts['ok']} ok, {counts['warn']} warnings, {counts['fail']} failed: {verdict}"
    )
    return "\n".join(lines)
