"""Mandarin heard with the wrong characters: matching by sound (pinyin), not by writing.

Whisper often writes the right syllables with other characters ("打開握式的燈" for 打开卧室的灯,
wò shì -> 握式), and no template takes them. This module reads the heard text as toneless
pinyin (pypinyin, ``voiced[languages]``) and rewrites runs of syllables that sound like a word
of this grammar (its templates' words, its lists, the home's names) to that word, then the
caller matches each rewriting strictly (hassil, the home's lists).

"Sounds like" folds what Whisper base confuses on Mandarin and Chinese input methods fold as
"fuzzy pinyin": retroflex and flat initials (zh/z, ch/c, sh/s), aspiration (p/b, t/d, k/g,
q/j, c/z), n/l, and the nasal finals an/ang, en/eng, in/ing. Tones are ignored. Each character
is one syllable, so a rewriting keeps the utterance's length: a word is only ever put where
the same number of syllables was heard, and nothing is added or dropped.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

log = logging.getLogger(__name__)

_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]+")
_GAPS = re.compile(r"[\W_]+")
_INITIALS = (
    ("zh", "z"), ("ch", "z"), ("sh", "s"), ("c", "z"), ("p", "b"), ("t", "d"),
    ("k", "g"), ("q", "j"), ("n", "l"),
)  # fmt: skip
_FINALS = (("ang", "an"), ("eng", "en"), ("ing", "in"))
MAX_WORD = 8
"""Longest word (characters) looked for."""
MIN_SYLLABLES = 4
"""Shorter utterances are not matched by sound: two or three syllables sound like too much
("期天", base's hearing of a cough of a word, folds to 几点 "what time")."""
MAX_READINGS = 64
"""Rewritings kept per position (the lattice is pruned to the ones with the fewest words)."""


def folded(syllable: str) -> str:
    """A toneless pinyin syllable with the fuzzy pairs folded together."""
    for long, short in _INITIALS:
        if syllable.startswith(long):
            syllable = short + syllable[len(long) :]
            break
    for long, short in _FINALS:
        if syllable.endswith(long):
            return syllable[: -len(long)] + short
    return syllable


@functools.lru_cache(maxsize=1)
def _pinyin() -> object | None:
    try:
        from pypinyin import Style, lazy_pinyin
    except ImportError:
        log.warning(
            "hassil: pypinyin is missing, so Mandarin heard with other characters will not "
            "match (pip install 'voiced[languages]')"
        )
        return None
    return lambda text: lazy_pinyin(text, style=Style.NORMAL, errors=lambda chars: list(chars))


def available() -> bool:
    return _pinyin() is not None


def sounds(text: str) -> list[str]:
    """Each character of ``text`` as its folded toneless syllable (others as themselves)."""
    convert = _pinyin()
    assert convert is not None
    out = []
    for char in text:
        syllables = convert(char) if _HAN.fullmatch(char) else [char]
        out.append(folded(syllables[0]) if syllables else char)
    return out


def run_together(text: str) -> str:
    """Heard text without spaces and punctuation: Whisper spaces and commas syllables
    ("先 再 起 點 中") that the templates write together."""
    return _GAPS.sub("", text)


def words_of(texts: Iterable[str]) -> set[str]:
    """The runs of Chinese characters in template text ("<current>[时间](几点[了]|几点钟)" ->
    时间, 几点, 了, 几点钟)."""
    return {run for text in texts for run in _HAN.findall(text) if len(run) <= MAX_WORD}


@dataclass
class SoundIndex:
    """The words of a grammar by how they sound."""

    by_sound: dict[tuple[str, ...], list[str]]

    @classmethod
    def of(cls, words: Iterable[str]) -> SoundIndex:
        by_sound: dict[tuple[str, ...], list[str]] = {}
        for word in sorted(set(words)):
            by_sound.setdefault(tuple(sounds(word)), []).append(word)
        return cls(by_sound)

    def readings(self, heard: str, limit: int = MAX_READINGS) -> Iterator[str]:
        """Rewritings of ``heard`` (Chinese, no spaces or punctuation) with words that sound
        like its syllables, those made of the fewest words first; ``heard`` itself is not one."""
        said = sounds(heard)
        n = len(said)
        # best[i]: readings of heard[:i] as (word count, changed characters, text)
        best: list[list[tuple[int, int, str]]] = [[] for _ in range(n + 1)]
        best[0] = [(0, 0, "")]
        for start in range(n):
            best[start] = sorted(set(best[start]))[:limit]
            if not best[start]:
                continue
            steps = [(heard[start], 0)]  # the character as heard
            for size in range(1, min(MAX_WORD, n - start) + 1):
                for word in self.by_sound.get(tuple(said[start : start + size]), ()):
                    changed = sum(a != b for a, b in zip(word, heard[start:], strict=False))
                    steps.append((word, changed))
            for count, changes, text in best[start]:
                for word, changed in steps:
                    best[start + len(word)].append((count + 1, changes + changed, text + word))
        seen = {heard}
        for _, changes, text in sorted(set(best[n]))[:limit]:
            if changes and text not in seen:
                seen.add(text)
                yield text
