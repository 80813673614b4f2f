"""The wake words: pyopen-wakeword's bundled models, one or several."""

from __future__ import annotations

from voiced.setup.console import Console, SetupError


def bundled_wake_words() -> list[str]:
    """The wake words pyopen-wakeword ships (okay_nabu, hey_jarvis, ...)."""
    from pyopen_wakeword import Model

    return [model.value for model in Model]


def check_wake_words(answer: str, known: list[str]) -> list[str]:
    """``okay nabu, hey_jarvis`` -> ["okay_nabu", "hey_jarvis"]; SetupError for unknown ones."""
    words = [w.strip().lower().replace(" ", "_").replace("-", "_") for w in answer.split(",")]
    words = [w for w in words if w]
    unknown = [w for w in words if w not in known]
    if not words or unknown:
        raise SetupError(
            f"wake word {', '.join(unknown) or '(none)'}: not bundled; pick from {', '.join(known)}"
        )
    return list(dict.fromkeys(words))


def ask_wake_words(console: Console, given: str | None) -> list[str]:
    console.heading("Wake word")
    known = bundled_wake_words()
    console.say("  bundled: " + ", ".join(known))

    def attempt(first: bool) -> list[str]:
        answer = console.ask("Wake word(s), comma-separated", "--wake-word",
                             given if first else None, "okay_nabu")  # fmt: skip
        return check_wake_words(answer, known)

    words = console.until_valid(attempt)
    console.ok(
        "say " + " or ".join(f"'{w.replace('_', ' ')}'" for w in words) + " before a command"
    )
    return words
