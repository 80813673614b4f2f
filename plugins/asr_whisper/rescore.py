"""Listening again: this home's sentences near what was heard, scored against the audio.

When no hypothesis of the decoder is a command, the intent stage (``command_candidates``)
names the home's sentences a word or two away from them ("turn on the bedroom fan" for
"turn on the bedroom and"). Whisper's decoder then scores each one on the same audio (forced
decoding: the mean log-probability of its tokens), and so does the free reading it preferred.
A candidate wins only when

- it is a strict command on this home (``command_meaning``), the best-scored of those,
- it scores at most ``drop`` below the free reading (the audio nearly says it), and
- no candidate that means something else scores within ``separation`` of it, and
- it leaves no more than a word or two of the free reading unsaid at its start or end
  (``unsaid_edges``: chatter around a name of the home is no command made of its middle).

Chatter is safe by the first two: the home's sentences nearest to it are words away and
score far below what Whisper heard; chatter that says a command's words among others, by
the last. The limits' values and the sets that chose them:
docs/asr.md, "Tuned constants".
The engine listens in the fitted window with ``DROP``; its optional second look, after a
prompted retry that found no command, in the full window with the stricter ``DROP_FULL``
(listen/second_look.py, ``recognition.rescore_full``).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any, Protocol

from voiced.api.languages import CHINESE_NUMERALS, chinese_number, chinese_numerals

from .common import WORD, words_of

NOTHING_NEAR = "no sentence of this home near what was heard"
"""Why no rescoring: the home has no sentence near the readings, nor did the search find one."""
NO_COMMAND = "none of the {} nearest sentences is a command here"
"""Why no rescoring: of the sentences near the readings, none is a command here."""

DROP = 2.0
"""Most mean log-probability a token a candidate may score below the free reading, on the
first look (the fitted window), each scored in its best surface form (``surface_forms``)."""
DROP_CHARACTERS = 1.0
"""``DROP`` for a language written in characters (Mandarin), where the constrained search
reads Whisper's characters of either script: commands rescored right came within 0.78,
chatter that named a room 1.46 and 1.54 below ("厨房里的饭菜很香" as "is the kitchen
light on"), a wrong command 1.29."""
DROP_FULL = 0.8
"""The same limit on the second look, in the full window after the prompted retry found no
command: stricter, as each look is one more chance to err; and for a sentence the
constrained search found that shares no word (no syllables) with a reading, which the audio
alone vouches for."""
SEPARATION = 0.3
"""Least lead the winner must have over a candidate with another meaning."""
CHECKS = 4
"""Best-scored candidates asked for their meaning (a strict match each: not free)."""
RESHAPED = 4
"""Best-scored candidates (as given) scored in their other surface forms too (each forced
score costs time: only the likeliest few)."""
RIVAL_NUMBERS = (*range(11), 12, 15, *range(20, 101, 5))
"""Numbers a rescored number no reading has is measured against (_number_rival)."""
ENDINGS = (".", "?")
"""Sentence ends always tried, beside those the free readings end with."""


class Rescorer(Protocol):
    def command_candidates(self, texts: list[str]) -> list[str]: ...

    def command_meaning(self, text: str) -> Any: ...


def rescorer_of(checker: Any) -> Rescorer | None:
    """The intent stage, when it can name candidates and say what they mean."""
    if callable(getattr(checker, "command_candidates", None)) and callable(
        getattr(checker, "command_meaning", None)
    ):
        return checker
    return None


@dataclass(frozen=True)
class Rescored:
    text: str
    score: float
    free_score: float
    why: str
    form: str = ""  # the surface form that scored best (``text`` as Whisper would write it)

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "score": round(self.score, 3),
            "free_score": round(self.free_score, 3),
            "why": self.why,
            **({"form": self.form} if self.form and self.form != self.text else {}),
        }


_NUMBER = re.compile(r"\d{1,3}(?:[,.]\d{3})+(?!\d)|\d+")
"""A number in digits, its thousands grouped ("3,900", "3.900") or not."""
_GROUPED_NUMBER = re.compile(r"\d{1,3}([,.])\d{3}(?!\d)")
_LONG_NUMBER = re.compile(r"(?<![\d.,])\d{4,}(?![\d.,]?\d)")
_MARKS = re.compile(r"[.?!。？！…]+$")
_EDGES = "\"'.,;:!?¿¡。，？！"


def surface_forms(heard: list[str], skip: Collection[str] = ()) -> Callable[[str], list[str]]:
    """The ways Whisper may write a candidate sentence, beside its free readings ``heard``
    (best first): as given (first: no form scores below it), and with its words cased as the
    top reading has them, the first one capitalized when the top reading's is; each of those
    ending in "." or "?" or a mark a reading ends with. The free reading is scored in its own
    cased, punctuated form; a candidate scored lowercase and bare loses 0.2-0.6 a token to it
    for the writing alone ("wie spät ist es" -1.71 against "Wie spät ist es?" -1.11), not
    for what the audio says. Where the top reading opens with one of the home's ``skip``
    phrases ("So, it's a garage door."), a candidate that opens with none is scored with it
    too: the audio says it, and a rival found with it ("So, what is the garage door") must
    not win by that alone. Where a reading groups a number's thousands ("3,900 Kelvin"), a
    candidate's numbers of four digits and more are scored so grouped too."""
    top = heard[0].split() if heard else []
    separator = next((m[1] for text in heard if (m := _GROUPED_NUMBER.search(text))), "")
    opening = opening_of(heard[0], skip) if heard else ""
    cased = {w.strip(_EDGES).casefold(): w.strip(_EDGES) for w in reversed(top[1:])}
    marks = [m[0] for text in heard if (m := _MARKS.search(text.strip()))]
    endings = list(dict.fromkeys([*ENDINGS, *marks]))
    upper_first = bool(top) and top[0][:1].isupper()

    def forms(text: str) -> list[str]:
        given = text.strip()
        words = [cased.get(w.casefold(), w) for w in given.split()]
        if words and upper_first:
            words[0] = words[0][:1].upper() + words[0][1:]
        bases = list(dict.fromkeys([given, " ".join(words)]))
        if opening and not opening_of(given, skip):
            bases.append(" ".join([opening, *(cased.get(w.casefold(), w) for w in given.split())]))
        if separator:
            bases = list(dict.fromkeys([*bases, *(grouped(base, separator) for base in bases)]))
        return [*bases, *(base + end for base in bases for end in endings)]

    return forms


def grouped(text: str, separator: str) -> str:
    """``text`` with its numbers of four digits and more written with their thousands grouped
    by ``separator`` ("3900" -> "3,900")."""
    return _LONG_NUMBER.sub(lambda m: f"{int(m[0]):,}".replace(",", separator), text)


def opening_of(text: str, skip: Collection[str]) -> str:
    """The phrase of ``skip`` that ``text`` opens with, as written there ("So," of "So, it's
    a garage door."; the longest), or ""."""
    words = text.split()
    plain = ["".join(_letter_words(w)) for w in words]
    for phrase in sorted((_letter_words(p) for p in skip), key=len, reverse=True):
        if phrase and plain[: len(phrase)] == phrase:
            return " ".join(words[: len(phrase)])
    return ""


def no_command_near(reason: str) -> bool:
    """Whether ``pick_rescored`` took nothing because no command was near what was heard
    (``reason``), not because one scored too far below, alike another or left words unsaid."""
    return reason == NOTHING_NEAR or re.fullmatch(NO_COMMAND.format(r"\d+"), reason) is not None


def pick_rescored(
    heard: list[str],
    rescorer: Rescorer,
    score: Callable[[list[str]], list[float]],
    drop: float = DROP,
    separation: float = SEPARATION,
    references: list[str] | None = None,
    forms: Callable[[str], list[str]] | None = None,
    heard_names: frozenset[str] = frozenset(),
    skip: Collection[str] = (),
    ungrounded: Collection[str] = (),
    sounds: Callable[[str], list[str]] | None = None,
) -> tuple[Rescored | None, str]:
    """The home's sentence the audio says, by the rules above, and why (or why none).
    ``references``: the free readings to measure against (the best-scored counts; default
    the top one of ``heard``). ``forms``: the surface forms a candidate is scored in, the
    best counting (``surface_forms``; default: the candidate as given). ``skip``: the
    home's words that mean nothing around a command (``unsaid_edges``). ``ungrounded``:
    candidates no reading has a word of, held to ``DROP_FULL``. ``sounds``: the home
    grammar's ``sounds_of``, which settles commands that score alike (``settled_by_sound``)."""
    candidates = [c for c in rescorer.command_candidates(heard) if c.strip()]
    if not candidates:
        return None, NOTHING_NEAR
    free_texts = references or heard[:1]
    scored = _Scored(score, forms)
    ranked = scored.rank(candidates, also=tuple(free_texts))
    free = max(score(free_texts))
    alike = Alike(rescorer, separation, lambda: sound_likeness(sounds, heard))
    winner, clash = alike.first_command(ranked[:CHECKS])
    if winner is None and clash is None:
        winner, clash, ranked = _other_first_words(ranked, rescorer, scored, alike)
    if clash is not None:
        return None, clash
    if winner is None:
        return None, NO_COMMAND.format(len(scored.best))
    value, text, meaning = winner
    if lost := _names_lost(heard_names, text):
        keeping = _keeping_names(ranked, rescorer, heard_names, value, meaning, separation)
        if keeping is None:
            return None, f"{text!r} leaves out {', '.join(lost)!r}: a name of this home, heard"
        value, text = keeping
    if unsaid := min((unsaid_edges(t, text, skip) for t in free_texts), key=len):
        return None, f"{text!r} leaves {unsaid!r} unsaid: heard, around the command"
    if far := _too_far(text, free - value, drop, ungrounded):
        return None, far
    form = scored.best[text][1]
    if rival := _number_rival(text, form, value, heard, free_texts, score, separation):
        return None, rival
    why = _taken(text, len(candidates), free - value, text in ungrounded)
    return Rescored(text, value, free, why, form), why


def _too_far(text: str, below: float, drop: float, ungrounded: Collection[str]) -> str:
    """Why ``text``, ``below`` the free reading, is too far below it ("" if it is not): more
    than ``drop``, or than ``DROP_FULL`` where no reading has its words."""
    limit = min(drop, DROP_FULL) if text in ungrounded else drop
    return (
        f"{text!r} scores {below:.2f} below what was heard (most {limit})" if below > limit else ""
    )


def _taken(text: str, candidates: int, below: float, ungrounded: bool) -> str:
    """Why ``text`` was taken."""
    why = f"{text!r}: best of {candidates} home sentences, {below:.2f} below"
    return why + (", no reading has its words" if ungrounded else "")


class _Scored:
    """Candidates scored against the audio, each in its best surface form."""

    def __init__(
        self, score: Callable[[list[str]], list[float]], forms: Callable[[str], list[str]] | None
    ) -> None:
        self.score, self.forms = score, forms
        self.best: dict[str, tuple[float, str]] = {}  # candidate -> (score, its best form)

    def rank(self, more: list[str], also: tuple[str, ...] = ()) -> list[tuple[float, str]]:
        """Score ``more`` candidates (the likeliest few in their other forms too) and the
        texts ``also`` in the same batch; all candidates ranked, best first."""
        forms, best = self.forms, self.best
        written = {c: (forms(c) if forms else None) or [c] for c in more}
        values = self.score([*also, *(written[c][0] for c in more)])[len(also) :]
        best.update((c, (value, written[c][0])) for c, value in zip(more, values, strict=True))
        if forms is not None:  # one more batch
            top = sorted(more, key=lambda c: -best[c][0])[:RESHAPED]
            reshaped = [(c, f) for c in top for f in written[c][1:]]
            values = self.score([f for _, f in reshaped]) if reshaped else []
            for (c, f), value in zip(reshaped, values, strict=True):
                best[c] = max(best[c], (value, f))
        return sorted(((value, c) for c, (value, _) in best.items()), reverse=True)


def _other_first_words(
    ranked: list[tuple[float, str]],
    rescorer: Rescorer,
    scored: _Scored,
    alike: Alike,
) -> tuple[Any, str | None, list[tuple[float, str]]]:
    """When the best-scored mean nothing, their first word may be the slip ("in the back door
    locked" for "is the back door locked"): the rescorer's variants, scored and checked, and
    the ranking with them (``ranked`` where there are none)."""
    variants = getattr(rescorer, "command_variants", None)
    if not callable(variants):
        return None, None, ranked
    top = [text for _, text in ranked[:CHECKS]]
    offered = [v for v in variants(top) if v not in scored.best]
    if not offered:
        return None, None, ranked
    ranked = scored.rank(offered)
    winner, clash = alike.first_command(ranked[:CHECKS])
    return winner, clash, ranked


def _keeping_names(
    ranked: list[tuple[float, str]],
    rescorer: Rescorer,
    heard_names: frozenset[str],
    value: float,
    meaning: Any,
    separation: float,
) -> tuple[float, str] | None:
    """The same command said another way, as near, that keeps the names heard ("what is the
    weather" and "... like", for "What is the way of the light?"), or None."""
    alike = (
        (v, t)
        for v, t in ranked[:CHECKS]
        if value - v < separation and not _names_lost(heard_names, t)
    )
    return next((vt for vt in alike if rescorer.command_meaning(vt[1]) == meaning), None)


def _name_words(text: str) -> set[str]:
    return {w.removesuffix("s") for w in words_of(text)}


NAME_KEPT = 0.6
"""Least similarity (difflib's ratio) of a word of the rescored command to a name word
heard for that name to count as kept: respelled ("mag floor" -> "back door"), not dropped
("fan" against any word of "turn off the kitchen, light in the kitchen")."""
NAME_KEPT_SAME_START = 0.4
"""The same for a word that starts with the same letter ("like" for a heard "light")."""


def names_heard(top: str, names: str) -> frozenset[str]:
    """The words of the home's ``names`` (the intent stage's ``prompt_words``) in the top
    free reading: a rescored command must keep each, if respelled (``_names_lost``), or it
    acts on part of what was asked ("turn off the kitchen lights and the fan", heard so, was
    found as "turn off the kitchen, light in the kitchen"). Plurals count as their singular."""
    return frozenset(_name_words(top) & _name_words(names))


def _names_lost(heard_names: frozenset[str], text: str) -> list[str]:
    words = _name_words(text)

    def kept(name: str, word: str) -> bool:
        ratio = difflib.SequenceMatcher(None, name, word).ratio()
        return ratio >= (NAME_KEPT_SAME_START if name[:1] == word[:1] else NAME_KEPT)

    return sorted(name for name in heard_names if not any(kept(name, w) for w in words))


SOUND_LEAD = 0.1
"""Least lead in sound likeness (``sound_likeness``) by which the readings settle commands
of different meanings that score alike on the audio."""


def sound_likeness(
    sounds: Callable[[str], list[str]] | None, heard: list[str]
) -> Callable[[str], float] | None:
    """How like the readings ``heard`` a sentence sounds (0-1: difflib's ratio of the letters
    of their syllables, the best reading counting), by the home grammar's ``sounds``
    (Mandarin's folded pinyin), or by the letters of their words where the grammar hears no
    syllables (a language written in words: "Turn off the world's guns." is the wall sconce,
    not the forecast); None where the readings say nothing."""
    for hear in [h for h in (sounds, words_of) if h is not None]:  # then the words' letters
        readings = [" ".join(s) for s in map(hear, heard) if s]
        if readings:
            break
    else:
        return None

    def likeness(text: str) -> float:
        said = " ".join(hear(text))
        return max(difflib.SequenceMatcher(None, said, r).ratio() for r in readings)

    return likeness


Candidate = tuple[float, str, Any]
"""A command candidate: its score, its text, its meaning."""


class Alike:
    """The rule for candidates that score alike: the best-scored command wins unless one
    within ``separation`` of it means another thing, and then only the readings' sounds
    (``likeness``, made only when such a clash is met) may settle it."""

    def __init__(
        self,
        rescorer: Rescorer,
        separation: float,
        likeness: Callable[[], Callable[[str], float] | None] = lambda: None,
    ) -> None:
        self.rescorer, self.separation, self.likeness = rescorer, separation, likeness

    def first_command(self, ranked: list[tuple[float, str]]) -> tuple[Candidate | None, str | None]:
        """The best-scored command of ``ranked`` (score, text, meaning), or why none may
        win: one scoring within ``separation`` of it means another thing, and the readings
        do not sound clearly more like one meaning."""
        near: list[Candidate] = []
        for value, text in ranked:
            if near and near[0][0] - value >= self.separation:
                break
            meaning = self.rescorer.command_meaning(text)
            if meaning is not None:
                near.append((value, text, meaning))
        if not near:
            return None, None
        winner = near[0]
        other = next((c for c in near if c[2] != winner[2]), None)
        if other is None:
            return winner, None
        if settled := self.settled_by_sound(near):
            return settled, None
        return None, f"{winner[1]!r} and {other[1]!r} score alike and mean different things"

    def settled_by_sound(self, near: list[Candidate]) -> Candidate | None:
        """Of commands scoring alike (best first), the best-scored one of the meaning whose
        sentences sound most like the readings, when it leads every other meaning's by
        SOUND_LEAD; None without sounds or such a lead."""
        likeness = self.likeness()
        if likeness is None:
            return None
        best: list[tuple[float, Candidate]] = []  # per meaning: its likeness, its first
        for candidate in near:
            like = likeness(candidate[1])
            same = next((i for i, (_, c) in enumerate(best) if c[2] == candidate[2]), None)
            if same is None:
                best.append((like, candidate))
            elif like > best[same][0]:
                best[same] = (like, best[same][1])
        best.sort(key=lambda lc: -lc[0])
        return best[0][1] if best[0][0] - best[1][0] >= SOUND_LEAD else None


EDGE_UNSAID = 10
"""Most letters a free reading may say before or after all that a rescored command says of
it (``unsaid_edges``): chatter around a name of the home ("who keeps leaving the Shelley
relay on", found as "the shelly relay on") leaves 15-16 unsaid, misheard commands at most
5 (docs/asr.md, "Tuned constants")."""
ANCHOR_LETTERS = 3
"""Least letters in a row that a command and a reading must share to be lined up there."""


def unsaid_edges(heard: str, text: str, skip: Collection[str] = ()) -> str:
    """What the reading ``heard`` says before or after all that the sentence ``text`` says
    of it, when that is more than EDGE_UNSAID letters ("" otherwise): lined up by letters
    (a misheard command is respelled, "let's tramp on the solar" for "next track on the
    sonos", not cut short), the ``skip`` words left out of both (an opening phrase says
    nothing of the reading: "I'd like you to tell me the time" lined up "Talk the right to
    the sea, how that you ought to be the moon." by its opening), a repeat of what the
    command covers (a decoder's loop) not counted. The forced score of a sentence counts
    only its own tokens: it does not see audio the sentence leaves unsaid."""
    said = _without(_letter_words(heard), skip)
    wanted = "".join(_without(_letter_words(text), skip))
    letters = "".join(said)
    matcher = difflib.SequenceMatcher(None, letters, wanted, autojunk=False)
    anchors = [b for b in matcher.get_matching_blocks() if b.size >= ANCHOR_LETTERS]
    if not anchors:
        return ""  # nothing lined up: a respelling throughout, the scores judge it
    first, last = anchors[0], anchors[-1]
    lead = max(0, first.a - first.b)
    tail = max(0, (len(letters) - last.a - last.size) - (len(wanted) - last.b - last.size))
    covered = letters[first.a : last.a + last.size]
    edges = [w for w in _edge_words(said, lead, tail) if w not in covered]
    return " ".join(edges) if sum(map(len, edges)) > EDGE_UNSAID else ""


def _letter_words(text: str) -> list[str]:
    return [w.casefold().replace("'", "") for w in WORD.findall(text)]


def _without(words: list[str], skip: Collection[str]) -> list[str]:
    """``words`` without the phrases of ``skip`` (each one word or several)."""
    phrases = sorted((_letter_words(p) for p in skip), key=len, reverse=True)
    kept, i = [], 0
    while i < len(words):
        found = next((p for p in phrases if p and words[i : i + len(p)] == p), None)
        if found is None:
            kept.append(words[i])
        i += len(found) if found else 1
    return kept


def _edge_words(words: list[str], lead: int, tail: int) -> list[str]:
    """The words mostly within the first ``lead`` or the last ``tail`` letters of ``words``."""
    out, start = [], 0
    total = sum(map(len, words))
    for word in words:
        middle = start + len(word) / 2
        if middle <= lead or middle >= total - tail:
            out.append(word)
        start += len(word)
    return out


def _number_rival(
    text: str,
    form: str,
    value: float,
    heard: list[str],
    references: list[str],
    score: Callable[[list[str]], list[float]],
    separation: float,
) -> str | None:
    """Why a number in ``text`` is not clear, if one is not: no reading has it, and the same
    sentence (in its best ``form``) with another common number scores within ``separation``
    ("set a timer for 8 minutes" or 5, for a noisy "five minutes" heard "a time of all I've
    been"), nor with a number a reading has (chatter "set the oven to 200 degrees" found as
    "set the temperature to 100 degrees", 200 out of the thermostat's range). Words and
    names are judged among the home's sentences, but a number the decoder never wrote has
    100 rivals that are no candidates: the likeliest are asked. Each number no reading has
    is asked about ("设置一个五分钟的计时器": 一 and 五)."""
    readings = {n for reading in [*heard, *references] for _, n in numbers_in(reading)}
    # the readings' own numbers first: "set the oven to 200 degrees" is no "... to 100 ..."
    asked = dict.fromkeys([*sorted(readings, key=lambda n: (len(n), n)), *map(str, RIVAL_NUMBERS)])
    for written, number in numbers_in(text):
        if number in readings:
            continue
        others = [n for n in asked if n != number]
        said, spelled = _written_as(written, number, others)
        rivals = score([said.sub(lambda m, o=o: _like(o, m[0]), form, 1) for o in spelled])
        rival, other = max(zip(rivals, spelled, strict=True))
        if value - rival < separation:
            return f"{text!r}: {written} or {other}? they score {value - rival:.2f} apart"
    return None


def _written_as(written: str, number: str, others: list[str]) -> tuple[re.Pattern[str], list[str]]:
    """Where ``number`` is written (as ``written``) in a sentence, and the ``others`` written
    as it is: digits (found with its thousands grouped or not), or Chinese numerals."""
    if _ungrouped(written) == number:
        writings = dict.fromkeys([written, number, grouped(number, ","), grouped(number, ".")])
        return re.compile(rf"(?<!\d)(?:{'|'.join(map(re.escape, writings))})(?!\d)"), others
    said = re.compile(rf"(?<![{CHINESE_NUMERALS}]){written}(?![{CHINESE_NUMERALS}])")
    return said, [chinese_numerals(int(n)) or n for n in others if n.isdigit()]


def _ungrouped(number: str) -> str:
    """A number in digits less its thousands' separators ("3,900" -> "3900")."""
    return number.replace(",", "").replace(".", "")


def _like(other: str, written: str) -> str:
    """``other`` with its thousands grouped as ``written`` groups them ("3,900": 3800 ->
    "3,800"), else as it is."""
    separator = next((c for c in written if c in ",."), "")
    return grouped(other, separator) if separator else other


_CHINESE_NUMBER = re.compile(
    rf"[{CHINESE_NUMERALS}]+(?=[分秒度小个点%％]|$)|(?<=[到为至])[{CHINESE_NUMERALS}]+"
)
"""Chinese numerals that count something: before a unit ("十分钟", "二十二度"), or set to
("调到五十"); not those of words ("一下", "万一")."""


def numbers_in(text: str) -> list[tuple[str, str]]:
    """The numbers ``text`` writes, each as written and in digits: digit runs, their
    thousands grouped or not ("3,900": ("3,900", "3900")), and Chinese numerals that count
    something ("设置十分钟的计时器": ("十", "10"))."""
    found = [(m[0], _ungrouped(m[0])) for m in _NUMBER.finditer(text)]
    for m in _CHINESE_NUMBER.finditer(text):
        value = chinese_number(m[0])
        if isinstance(value, int):
            found.append((m[0], str(value)))
    return found
