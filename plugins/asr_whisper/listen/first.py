"""The first reading: one decode of the fitted window, N-best, and the home's choice in it.

Whisper's no-speech rule (a no-speech probability above ``no_speech_threshold`` and an
improbable decode) was made for its 30 s window; in a fitted window it can call clear speech
silence (Whisper base on espeak-ng's "Welches Datum haben wir heute?": 0.63 in 5 s, 0.15 in
30 s, where it reads the sentence right). A first decode that rule alone would drop is read
again in the full window, once, and that reading goes on (the endpoint's pass; not the
early-commit draft's).
"""

from __future__ import annotations

from voiced.api.recognition import Decision, Decode

from ..choose import choose
from ..common import FULL_WINDOW_S, silent_by_rule, window_seconds
from .state import Listening, Utterance, Window, encode_window

SPEECH_IN_FULL = "; no speech by Whisper's rule in the fitted window, speech in the full one"


def first_reading(u: Utterance) -> Listening:
    """Encode the fitted window once, decode its N-best, choose a command within the margin
    (in the full window when the fitted one's reading was silence by the no-speech rule)."""
    window = encode_window(u, window_seconds(u.seconds, u.options))
    windows = {window.width: window}
    decode = _decode(u, window)
    confirmed = ""
    if u.plan.home_steps and window.width < FULL_WINDOW_S and silent_by_probability(decode, u):
        full = encode_window(u, FULL_WINDOW_S)
        windows[FULL_WINDOW_S] = full
        again = _decode(u, full)
        if not silent_by_probability(again, u):
            window, decode, confirmed = full, again, SPEECH_IN_FULL
    choice = choose(decode.hypotheses, u.home, u.options.recognition.hypothesis_margin)
    decision = Decision("first", choice.why + confirmed, choice.index)
    return Listening(
        window,
        decode,
        decode.hypotheses[choice.index],
        choice.command,
        decision,
        windows=windows,
    )


def silent_by_probability(decode: Decode, u: Utterance) -> bool:
    """Whether Whisper's no-speech rule drops ``decode`` on its probability and log-probability
    (not above ``no_speech_reject``, which drops it however it is read)."""
    reject = u.options.no_speech_reject
    if reject is not None and decode.no_speech_prob > reject:
        return False
    return silent_by_rule(decode.no_speech_prob, decode.avg_logprob, u.options)


def _decode(u: Utterance, window: Window) -> Decode:
    return u.decoder.generate(window.encoded, u.seconds, window.width, u.language, count=u.count)
