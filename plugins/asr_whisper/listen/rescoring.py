"""Rescoring: the home's sentences near the readings, scored against the audio in one window,
with the constrained search's finds among them (../rescore.py, ../constrained.py; the
sentences near the readings scored while the search runs: beside.py), and where none is
taken, the tail search's (../tails.py)."""

from __future__ import annotations

import numpy as np

from voiced.api.recognition import Hypothesis, NextLogprobs

from ..constrained import (
    BEAM,
    BEAM_CHARACTERS,
    Found,
    WithConstrained,
    commands_found,
    skip_words_of,
)
from ..rescore import (
    DROP_CHARACTERS,
    DROP_FULL,
    NOTHING_NEAR,
    Rescored,
    no_command_near,
    pick_rescored,
    surface_forms,
)
from ..tails import tail_commands
from .beside import scored_beside
from .state import Listening, Utterance, Window


def search(u: Utterance, s: Listening, window: Window, free: list[Hypothesis]) -> None:
    """The constrained search in ``window`` (once per window), bounded by its ``free`` readings
    and by the budget: once it is spent the search ends with the sentences it has finished."""
    if u.grammar is None or window.searched:
        return
    opts = u.options.recognition
    cut: list[bool] = []
    if window.steps is None:
        window.steps = u.decoder.next_logprobs(window.encoded)
    window.found = commands_found(
        until_spent(u, window.steps, cut),
        u.decoder.tokenizer(u.language),
        u.grammar,
        [(h.text, h.avg_logprob) for h in free],
        u.asked,
        beam_of(u),
        opts.search_one_template,
        opts.search_first_words,
        opts.search_openings,
    )
    window.searched = True
    if cut:
        s.decision.skipped.append("search")


def beam_of(u: Utterance) -> int:
    """Readings the search keeps a step: the profile's ``search_beam``, else the language's
    (``BEAM``; ``BEAM_CHARACTERS`` for one written in characters)."""
    return u.options.recognition.search_beam or (BEAM_CHARACTERS if u.in_characters else BEAM)


def until_spent(u: Utterance, steps: NextLogprobs, cut: list[bool]) -> NextLogprobs:
    """The search's next-token steps while the budget lasts; after it every token is
    impossible (-inf), so no reading grows and the search ends (``cut`` says it did)."""
    last: list[np.ndarray] = []

    def step(prompt: list[int], prefixes: list[tuple[int, ...]]) -> list[np.ndarray]:
        if last and u.spent():
            if not cut:
                cut.append(True)
            return [np.full_like(last[0], -np.inf) for _ in prefixes]
        rows = steps(prompt, prefixes)
        last[:] = rows[:1]
        return rows

    return step


def rescore(
    u: Utterance, s: Listening, heard: list[Hypothesis], free: list[Hypothesis], window: Window
) -> Hypothesis | None:
    """The home's sentence near ``heard`` the audio says in ``window``, if any; ``free``: that
    window's own readings. A second look (another window, after the retry) measures against
    the top reading of either decode, with the stricter limit. The intent stage's sentences
    near ``heard`` are scored while the search runs (beside.py)."""
    with scored_beside(u, heard, window):
        search(u, s, window, free)
    picked, reason = pick(u, s, [h.text for h in heard], [h.text for h in free], window)
    s.rescored = picked.to_dict() if picked is not None else {"why": reason}
    s.rescored["window_s"] = window.width
    if window.found is not None:
        s.rescored["constrained"] = window.found.commands
    if window.tails_searched:
        s.rescored["tails"] = window.tails.commands if window.tails is not None else []
    if picked is None:
        return None
    s.decision.why = "rescored: " + picked.why
    return Hypothesis(picked.text, s.hypotheses[0].avg_logprob)


def pick(
    u: Utterance, s: Listening, texts: list[str], free: list[str], window: Window
) -> tuple[Rescored | None, str]:
    """``pick_rescored`` in ``window`` for the readings ``texts`` (``free``: the window's own),
    from the search's finds in ``tiers``; the first taken, or why none was. Where no command
    was near, the tail search's finds (``tails``), held to the stricter ``DROP_FULL``."""
    opts = u.options.recognition
    skip = skip_words_of(u.home)
    opening = skip if opts.search_openings else ()
    forms = surface_forms([*texts, *free], opening) if opts.rescore_forms else None
    drop = min(opts.rescore_drop, DROP_CHARACTERS) if u.in_characters else opts.rescore_drop
    second = window.width != s.window.width and bool(s.retried)
    tops = [s.hypotheses[0].text, s.retried[0].text] if second else []
    home = u.asked
    sounds = getattr(u.home, "sounds_of", None)

    def weigh(found: Found | None, limit: float) -> tuple[Rescored | None, str]:
        return pick_rescored(
            texts,
            WithConstrained(home, found) if found is not None else home,
            lambda candidates: window.score(u.decoder, u.language, candidates),
            drop=limit,
            references=list(dict.fromkeys(tops)) or None,
            forms=forms,
            heard_names=s.heard_names,
            skip=skip,
            ungrounded=found.ungrounded if found is not None else (),
            sounds=sounds,
        )

    picked, reason = None, NOTHING_NEAR
    for found in tiers(window.found):
        picked, reason = weigh(found, min(DROP_FULL, drop) if second else drop)
        if picked is not None:
            return picked, reason
    if no_command_near(reason) and (found := tails(u, s, window)) is not None:
        taken, why = weigh(found, min(DROP_FULL, drop))
        if taken is not None:
            return taken, why
    return picked, reason


def tails(u: Utterance, s: Listening, window: Window) -> Found | None:
    """The commands whose tail the audio says after the first decode's first word
    (../tails.py), searched once a window; their first words were put before what was
    heard, not heard."""
    if not u.options.recognition.search_tails or u.grammar is None or not u.grammar.spaced:
        return None  # in a language written with spaces
    if window.steps is None or window.tails_searched:
        return None
    window.tails_searched = True
    cut: list[bool] = []
    window.tails = tail_commands(
        until_spent(u, window.steps, cut),
        u.decoder.tokenizer(u.language),
        u.grammar,
        [(h.text, h.avg_logprob) for h in s.hypotheses],
        u.asked,
        beam_of(u),
    )
    if cut:
        s.decision.skipped.append("tails")
    return window.tails


def tiers(found: Found | None) -> list[Found | None]:
    """What the rescoring picks from, in turn: the search's finds a reading grounds, then,
    if none of those is taken, all of them (a sentence no reading grounds is the last
    resort, never a rival that stops a grounded one)."""
    if found is None or not found.ungrounded:
        return [found]
    return [found.grounded(), found]


def sampled_look(u: Utterance, s: Listening) -> str:
    """Rescoring of the fallback's samples, drawn after the first look found no command:
    the search again in the same window (its steps as they were), bounded and grounded by
    the samples' readings, then the pick among them."""
    s.window.searched = False
    return first_look(u, s)


def first_look(u: Utterance, s: Listening) -> str:
    """Rescoring in the fitted window, against the first decode's readings."""
    found = rescore(u, s, s.hypotheses, s.hypotheses, s.window)
    if found is None:
        return (s.rescored or {}).get("why", "none")
    s.keep(found, "rescore")
    return found.text
