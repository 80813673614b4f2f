"""``voiced doctor`` results a plugin's ``voiced_doctor_checks`` returns.

Public API for plugins: names here stay stable; the module behind them may move."""

from __future__ import annotations

from voiced.doctor.checks import (
    MARKS,
    SECTIONS,
    TITLES,
    Check,
    Report,
    render,
)

__all__ = [
    "MARKS",
    "SECTIONS",
    "TITLES",
    "Check",
    "Report",
    "render",
]
