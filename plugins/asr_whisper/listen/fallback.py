"""The temperature fallback step: a decode that fails Whisper's thresholds, sampled again."""

from __future__ import annotations

from ..choose import choose
from ..fallback import with_fallback
from .state import Listening, Utterance


def temperature_fallback(u: Utterance, s: Listening) -> str:
    """Decode again at rising temperatures when the first decode fails (../fallback.py);
    a command on this home is kept as heard. Says what happened."""
    if s.command:
        return "kept: a command"
    window = s.window

    def decode_at(temperature: float):
        return u.decoder.generate(
            window.encoded,
            u.seconds,
            window.width,
            u.language,
            count=u.count,
            temperature=temperature,
        )

    decode, tried = with_fallback(s.decode, u.options.temperatures, u.options, decode_at)
    if not tried:
        return "passed Whisper's thresholds"
    choice = choose(decode.hypotheses, u.home, u.options.recognition.hypothesis_margin)
    s.decode, s.fallback = decode, tried
    s.chosen, s.command = decode.hypotheses[choice.index], choice.command
    s.decision.step, s.decision.why, s.decision.index = "fallback", choice.why, choice.index
    return f"temperature {decode.temperature}"
