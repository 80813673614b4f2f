"""Reading a timestamped Whisper decode back into text, dropping what lies past the audio.

With an encoder window sized to the utterance ("fit"), Whisper sometimes starts the sentence
again in the padding after the speech. Timestamps say where each segment starts: a segment
that starts at the end of the audio (or later), or that repeats the segment before it, was
never spoken, so it is dropped; a phrase repeated over and over inside one segment is cut to
one copy.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

TIME_PRECISION = 0.02
END_MARGIN_S = 0.3


def _words(text: str) -> str:
    return " ".join(re.sub(r"[^\w' ]", " ", text.lower()).split())


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
        if start >= audio_seconds - END_MARGIN_S or (
            texts and text and _words(texts[-1]).startswith(_words(text))
        ):
            dropped = len(segments) - index
            break
        if text:
            texts.append(text)
    text, looped = drop_repeats(" ".join(texts))
    return text, dropped + looped
