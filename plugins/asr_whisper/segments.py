"""Reading a timestamped Whisper decode back into text, dropping what lies past the audio.

With an encoder window sized to the utterance ("fit"), Whisper sometimes starts the sentence
again in the padding after the speech. Timestamps say where each segment starts: a segment
that starts at the end of the audio (or later), or that repeats the segment before it, was
never spoken, so it is dropped; a phrase repeated over and over inside one segment is cut to
one copy.

Repeats are found on normalized words (case, punctuation and the endings -ing/-ed/-s folded),
so "Turning on the coffee maker. Turn on the coffee maker." is one sentence said twice, and
against every earlier sentence, not just the one before (A-B-A).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Sequence

TIME_PRECISION = 0.02
END_MARGIN_S = 0.3
SAME_SENTENCE = 0.9
"""Word-level similarity at which a sentence counts as a repeat of an earlier one."""

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_ENDING = re.compile(r"(?<=\w{3})(ing|ed|es|s)$")


def _words(text: str) -> str:
    return " ".join(re.sub(r"[^\w' ]", " ", text.lower()).split())


def _stems(text: str) -> list[str]:
    return [_ENDING.sub("", w) for w in _words(text).split()]


def repeats(sentence: str, earlier: Sequence[str]) -> bool:
    """Whether ``sentence`` says again (or starts to say again) one of ``earlier``."""
    words = _stems(sentence)
    if not words:
        return False
    for before in earlier:
        seen = _stems(before)
        if seen[: len(words)] == words and len(words) >= 3:
            return True  # a repeat cut short: "Turn on the kitchen." after the full sentence
        if difflib.SequenceMatcher(None, words, seen).ratio() >= SAME_SENTENCE:
            return True
    return False


def first_sentences(text: str) -> tuple[str, bool]:
    """The sentences of ``text`` up to the first that repeats an earlier one; also whether
    anything was cut."""
    sentences = [s for s in _SENTENCE_END.split(text.strip()) if s]
    for index in range(1, len(sentences)):
        if repeats(sentences[index], sentences[:index]):
            return " ".join(sentences[:index]), True
    return text.strip(), False


def split_segments(tokens: Sequence[int], timestamp_begin: int) -> list[tuple[float, list[int]]]:
    """Token ids with timestamp tokens -> [(start seconds, text token ids)]."""
    segments: list[tuple[float, list[int]]] = []
    current: list[int] = []
    start: float | None = None
    for token in tokens:
        if token >= timestamp_begin:
            seconds = (token - timestamp_begin) * TIME_PRECISION
            if start is None:
                start = seconds
            else:  # the closing timestamp of a pair
                segments.append((start, current))
                current, start = [], None
        else:
            current.append(token)
    if current:
        segments.append((start or 0.0, current))
    return segments


def drop_repeats(text: str, min_words: int = 2) -> tuple[str, bool]:
    """Cut a loop to one copy ("a b c a b c a b" -> "a b c"): one phrase over and over.

    Only phrases of ``min_words`` or more count, so "stop stop" stays as it is.
    """
    tokens = text.split()
    norm = [_words(t) for t in tokens]
    for period in range(min_words, len(tokens) // 2 + 1):
        if all(norm[i] == norm[i + period] for i in range(len(tokens) - period)):
            return " ".join(tokens[:period]), True
    return text, False


def spoken_text(
    tokens: Sequence[int],
    timestamp_begin: int,
    audio_seconds: float,
    decode: Callable[[list[int]], str],
) -> tuple[str, int]:
    """The text of the segments that lie in the audio, without a repetition loop; also how
    many segments were dropped (a loop inside one segment counts as one)."""
    segments = split_segments(tokens, timestamp_begin)
    texts: list[str] = []
    dropped = 0
    for index, (start, ids) in enumerate(segments):
        text = decode(ids).strip()
        if start >= audio_seconds - END_MARGIN_S or (texts and text and repeats(text, texts)):
            dropped = len(segments) - index
            break
        if text:
            texts.append(text)
    text, looped = drop_repeats(" ".join(texts))
    text, cut = first_sentences(text)
    return text, dropped + looped + cut
