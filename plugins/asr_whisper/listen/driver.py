"""The recognizer: the order of its steps, on one screen.

quiet check -> first reading (N-best, the home's choice) -> temperature fallback ->
rescoring with the constrained search -> prompted retry -> second look. In a language that is
not lean, the fallback's samples of an improbable decode wait for the rescoring's first look
and are drawn only where it found no command (then rescored in turn). Each step is a module
of this package, asks only the ``Decoder`` and the ``HomeGrammar`` (voiced.api.recognition),
and leaves its outcome and time in the utterance's ``Decision``. Once the anytime budget
(``recognition.budget_s``) is spent, no further step runs and the constrained search grows
no further reading (``rescoring.until_spent``): what it finished is still scored, and the best
reading so far is kept.
The ``free`` profile asks no home: Whisper's reading, through the temperature fallback.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from voiced.api.intents import Transcript
from voiced.api.recognition import Decoder, has

from ..common import FULL_WINDOW_S, SAMPLE_RATE, judge, too_quiet
from ..rescore import names_heard
from .fallback import temperature_fallback
from .first import first_reading
from .homes import Homes
from .options import RecognitionOptions
from .record import transcript
from .rescoring import first_look, sampled_look
from .retry import prompted_retry
from .second_look import second_look
from .state import FULL, Listening, Plan, Utterance

Step = Callable[[Utterance, Listening], str]


def recognize(
    decoder: Decoder,
    homes: Homes,
    samples: np.ndarray,
    language: str | None,
    options: RecognitionOptions,
    plan: Plan = FULL,
    data: dict[str, Any] | None = None,
) -> Transcript:
    """What was said in ``samples``, decided step by step; ``data``: the engine's own."""
    started = time.perf_counter()
    data = dict(data or {})
    seconds = len(samples) / SAMPLE_RATE
    quiet = too_quiet(samples, options) if plan.quiet_check else None
    if quiet:
        data |= {"rejected": quiet, "window_s": 0}
        return Transcript("", language or "en", decoder.name, seconds, True, data)
    if seconds > FULL_WINDOW_S:
        return decoder.transcribe_long(samples, language, data)
    if decoder.multilingual and language is None:
        language, data["language_probability"] = decoder.detect(samples)
    profile = options.recognition
    home = homes.home(language) if plan.home and profile.home else None
    grammar = homes.grammar(language, home) if plan.home_steps and profile.searches else None
    u = Utterance(decoder, home, samples, language, options, plan, grammar, started)
    first = time.perf_counter()
    s = first_reading(u)
    s.decision.ran("first", s.decision.why, (time.perf_counter() - first) * 1000)
    s.decision.budget_s, s.decision.profile = profile.budget_s, profile.profile
    s.decision.home = home is not None
    if plan.fallback:
        run(u, s, "fallback", temperature_fallback)
    if plan.home_steps:
        home_steps(u, s)
    return transcript(u, s, data)


def home_steps(u: Utterance, s: Listening) -> None:
    """Rescoring, the prompted retry and the second look, for speech that is no command yet."""
    opts = u.options.recognition
    s.unmatched = unmatched_speech(u, s)
    rescoring = (
        s.unmatched and opts.rescore and has(u.home, "command_candidates", "command_meaning")
    )
    if rescoring and opts.rescore_names:
        s.heard_names = names_heard(s.hypotheses[0].text, u.home.prompt_words())
    if rescoring:
        run(u, s, "rescore", first_look)
    if s.sample_later and s.unmatched:
        run(u, s, "fallback", temperature_fallback)
        s.unmatched = unmatched_speech(u, s)
        if s.unmatched and rescoring:
            run(u, s, "rescore", sampled_look)
    if s.unmatched and opts.retry:
        run(u, s, "retry", prompted_retry)
        if s.unmatched and rescoring:
            run(u, s, "second_look", second_look)


def unmatched_speech(u: Utterance, s: Listening) -> bool:
    """Speech (not silence, not nothing) that is no command on this home."""
    if u.home is None or s.command or not s.chosen.text.strip():
        return False
    verdict = judge(s.chosen.text, s.chosen.avg_logprob, s.decode.no_speech_prob, u.options)
    return not verdict.no_speech


def run(u: Utterance, s: Listening, name: str, step: Step) -> None:
    """Run ``step`` unless the budget is spent; record its outcome and time."""
    if u.spent():
        s.decision.skipped.append(name)
        return
    started = time.perf_counter()
    outcome = step(u, s)
    s.decision.ran(name, outcome, (time.perf_counter() - started) * 1000)
