"""The first reading: one decode of the fitted window, N-best, and the home's choice in it."""

from __future__ import annotations

from voiced.api.recognition import Decision

from ..choose import choose
from ..common import window_seconds
from .state import Listening, Utterance, Window


def first_reading(u: Utterance) -> Listening:
    """Encode the fitted window once, decode its N-best, choose a command within the margin."""
    width = window_seconds(u.seconds, u.options)
    frames = min(width * 100, int(u.seconds * 100) + 1)
    window = Window(u.decoder.encode(u.samples, width), width, frames)
    decode = u.decoder.generate(window.encoded, u.seconds, width, u.language, count=u.count)
    choice = choose(decode.hypotheses, u.home, u.options.recognition.hypothesis_margin)
    decision = Decision("first", choice.why, choice.index)
    return Listening(
        window,
        decode,
        decode.hypotheses[choice.index],
        choice.command,
        decision,
        windows={width: window},
    )
