"""Asking the user, or answering from flags: one object for both ways setup runs."""

from __future__ import annotations

import getpass
import sys
from collections.abc import Callable
from typing import TextIO, TypeVar

T = TypeVar("T")


class SetupError(Exception):
    """A bad answer (an unreachable Home Assistant, a wrong token, no microphone): the message
    says what is wrong and what to do. Interactive setup asks again; ``--non-interactive``
    stops with it."""


class Console:
    """Prints setup's lines and gets answers: a flag's value first; in a terminal the user's
    answer (Enter takes the default); with ``--non-interactive`` the default, or an error
    naming the flag to pass when there is none."""

    def __init__(
        self, interactive: bool, out: TextIO | None = None, read: Callable[[str], str] = input
    ) -> None:
        self.interactive = interactive
        self.out = out or sys.stdout
        self._read = read

    # -- lines ----------------------------------------------------------------------------

    def say(self, text: str = "") -> None:
        self.out.write(text + "\n")
        self.out.flush()

    def heading(self, text: str) -> None:
        self.say(f"\n== {text} ==")

    def ok(self, text: str) -> None:
        self.say(f"  ✓ {text}")

    def warn(self, text: str) -> None:
        self.say(f"  ! {text}")

    def fail(self, text: str) -> None:
        self.say(f"  ✗ {text}")

    # -- answers --------------------------------------------------------------------------

    def ask(
        self,
        question: str,
        flag: str,
        given: str | None = None,
        default: str | None = None,
        secret: bool = False,
    ) -> str:
        """The answer to ``question``: ``given`` (a flag's value), else asked, else default."""
        if given is not None:
            self.say(f"{question}: {'(given)' if secret else given}")
            return given
        if not self.interactive:
            if default is None:
                raise SetupError(f"{question}: no answer; pass {flag}")
            self.say(f"{question}: {default}")
            return default
        shown = f" [{default}]" if default else ""
        while True:
            answer = self._prompt(f"{question}{shown}: ", secret).strip()
            if answer or default is not None:
                return answer or (default or "")
            self.say("  (an answer is needed)")

    def confirm(self, question: str, flag: str, given: bool | None, default: bool) -> bool:
        """Yes or no: the flag's value, else asked (y/n), else the default."""
        if given is not None or not self.interactive:
            answer = default if given is None else given
            self.say(f"{question} {'yes' if answer else 'no'}")
            return answer
        while True:
            text = self._prompt(f"{question} [{'Y/n' if default else 'y/N'}]: ", False)
            text = text.strip().lower()
            if not text:
                return default
            if text in ("y", "yes", "n", "no"):
                return text.startswith("y")
            self.say("  (y or n)")

    def until_valid(self, attempt: Callable[[bool], T]) -> T:
        """``attempt(first)`` until it raises no SetupError; ``first`` is False on a retry, when
        a flag's value (which just failed) must not be used again. Without a terminal the
        first error ends setup."""
        first = True
        while True:
            try:
                return attempt(first)
            except SetupError as exc:
                self.fail(str(exc))
                if not self.interactive:
                    raise
                first = False

    def _prompt(self, text: str, secret: bool) -> str:
        try:
            if secret:
                return getpass.getpass(text, stream=self.out)
            return self._read(text)
        except EOFError:
            raise SetupCancelled("setup cancelled (end of input)") from None


class SetupCancelled(Exception):
    """The user ended the input (Ctrl-D) or interrupted setup: nothing more is written."""
