"""The home's nearest sentences scored beside the constrained search.

The rescoring's pick scores two kinds of candidates against the audio: the constrained
search's finds and the intent stage's sentences a word or two from the readings
(``command_candidates``). The second kind does not wait for the search, so it is asked and
scored on a thread of its own while the search runs: the search's numpy steps keep one core
busy for most of a step, and the intent stage's matching and the decoder's teacher-forced
scores (CTranslate2's ``align``, which leaves the interpreter) take the other. The pick then
finds those scores in the window's cache and scores only the search's finds.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

from voiced.api.recognition import Hypothesis, has

from .state import Utterance, Window


@contextmanager
def scored_beside(u: Utterance, heard: list[Hypothesis], window: Window) -> Iterator[None]:
    """While the body runs, the home's sentences near ``heard`` (and its top reading, which
    they are measured against) are scored in ``window`` on another thread; on leaving, that
    scoring has ended, and what it raised is raised (unless the body raised first)."""
    if not heard or not has(u.home, "command_candidates") or not u.decoder.scores_beside_steps:
        yield
        return
    texts = [h.text for h in heard]

    def score() -> None:
        near = [c.strip() for c in u.asked.command_candidates(texts) if c.strip()]
        window.score(u.decoder, u.language, [texts[0], *near])

    with ThreadPoolExecutor(1, thread_name_prefix="voiced-rescoring") as pool:
        scoring = pool.submit(score)
        try:
            yield
        except BaseException:
            scoring.cancel()
            raise
        scoring.result()
