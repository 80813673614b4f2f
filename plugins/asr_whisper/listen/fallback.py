"""The temperature fallback step: a decode that fails Whisper's thresholds, sampled again.

Where the home steps read the speech after it (the ``home`` profile, rescoring or the retry
on, a language of ``state.LEAN_LANGUAGES``), a decode that is merely improbable is left to
them: they read it against the home's own sentences, sooner than sampling five times would.
A loop is always sampled again: its text is no reading to rescore against. Other languages
sample a failed decode after the rescoring's first look found no command in its own readings
(``looks_first``), and the rescoring reads the samples in turn: Whisper base's samples of
German found commands its home steps did not (docs/asr.md), and a command found without
them costs no samples. ``recognition.fallback = true`` samples every failed decode at once.
"""

from __future__ import annotations

from ..choose import choose
from ..fallback import failure, loops, with_fallback
from .state import Listening, Utterance


def temperature_fallback(u: Utterance, s: Listening) -> str:
    """Decode again at rising temperatures when the first decode fails (../fallback.py);
    a command on this home is kept as heard. Says what happened."""
    if s.command:
        return "kept: a command"
    if not s.sample_later and not loops(s.decode, u.options):
        why = failure(s.decode, u.options)
        if why is not None and home_reads(u):
            return f"left to the home steps: {why}"
        if why is not None and looks_first(u):
            s.sample_later = True
            return f"after the home's first look: {why}"
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


def home_reads(u: Utterance) -> bool:
    """Whether a home step reads the speech after the fallback, which then need not sample
    an improbable decode (``recognition.fallback`` off, a lean language)."""
    opts = u.options.recognition
    steps_on = u.plan.home_steps and (opts.rescore or opts.retry)
    return u.home is not None and steps_on and u.lean and not opts.fallback


def looks_first(u: Utterance) -> bool:
    """Whether the rescoring reads an improbable decode before it is sampled (a language
    that is not lean, ``recognition.fallback`` off): samples are drawn only where the home's
    first look finds no command in the decode's own readings."""
    opts = u.options.recognition
    steps_on = u.plan.home_steps and opts.rescore
    return u.home is not None and steps_on and not u.lean and not opts.fallback
