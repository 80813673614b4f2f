"""Repairing a transcript toward this home's own sentences (what Whisper misheard).

The strict matcher only takes a sentence its templates spell exactly; name snapping only mends
entity and area names. Whisper also slips on the command words around them ("is the front
door lock", "open the living room lines", "plus the radio"). This module knows the finite
space of things a person can say to this home, as a word graph read off the loaded templates:
which word may follow which (``{name}``/``{area}``/``{floor}`` filled with the home's own
names, every other text list with its values, a number for a range list). It never expands
the templates' sentences (over a million for English), only their word pairs.

``SentenceRepair.candidates`` searches the transcript's words for the cheapest paths through
that graph: a word the graph has costs nothing, a word it lacks may become a graph word that
sounds or is spelled alike (cost: one minus the similarity, metaphone and spelling with
jellyfish/rapidfuzz), a stutter ("the the") or a filler word may go. The stage then checks
each candidate with the strict matcher, so a repair always ends as a genuine template match,
and takes it only when the cheapest matching candidate is cheap enough and no other reading
with another meaning is close behind (``choose``).

Language-neutral: words are what the templates spell; numbers are read by hassil's number
words for the stage's language; the sound of a word is English metaphone's code unless the
stage hands the graph the language's own (``sounds``: eSpeak NG's phonemes, phonemes.py),
used beside the plain spelling, never alone (a homophone, the same phonemes, excepted).
"""

from __future__ import annotations

import heapq
import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import pairwise
from typing import TYPE_CHECKING, Any, Protocol

import jellyfish
from hassil import Intents
from hassil.expression import (
    Alternative,
    Expression,
    ListReference,
    Permutation,
    RuleReference,
    Sequence,
    TextChunk,
)
from hassil.intents import RangeSlotList, SlotList, TextSlotList, WildcardSlotList
from rapidfuzz import fuzz, process

from voiced.api.languages import counts_characters

if TYPE_CHECKING:
    from collections.abc import Sequence

START, END, NUMBER, ANY = "<s>", "</s>", "<#>", "<*>"
_TOKEN = re.compile(r"[^\W_]+(?:'[^\W_]+)*|%", re.UNICODE)

SOUND_POOL = 24
"""Graph words nearest in spelling whose sound is compared, with the language's phonemes."""
MIN_SIMILARITY = 0.45
"""A word is only replaced by a graph word at least this alike (spelling and sound averaged)."""
MAX_COST = 0.6
"""The most a repaired sentence may cost in all (one fairly close word, or two very close)."""
MAX_EDITS = 2
"""The most words a repair may change."""
MARGIN = 0.25
"""How much cheaper the winner must be than any reading with another meaning."""
CHECKS = 5
"""The most candidates the strict matcher is asked about per transcript (it is not cheap)."""


SPACE = "\x02"  # a chunk of spaces between template words (one node per chunk)
GLUE = "\x01"  # marks a template word that runs on into the next chunk: "minute[s]"


def tokens(text: str) -> list[str]:
    """Words as the graph spells them: case-folded, apostrophes and punctuation gone (Whisper
    and the templates disagree on them), ``%`` a word."""
    return _TOKEN.findall(text.casefold().replace("'", ""))


def _scripts(word: str) -> frozenset[str]:
    """The writing systems of a word's letters: LATIN, CJK, CYRILLIC, ..."""
    return frozenset(unicodedata.name(c, "?").split()[0] for c in word if c.isalpha())


def _chunk_tokens(text: str, space: str, unspaced: bool = False) -> list[str]:
    """A template chunk's pieces: words, GLUE-marked at an edge that does not end on a space
    ("minute" + "[s]" make "minutes"); a chunk of only spaces is the ``space`` node, which
    keeps the words on either side apart. ``unspaced`` (a language written without spaces:
    Chinese): each chunk's run of letters is a word of its own, glued to nothing ("打开" and
    "厨房" of "<turn_on><area>"), as no space tells where a word ends."""
    folded = text.casefold().replace("'", "")
    words = _TOKEN.findall(folded)
    if not words:
        return [space] if folded and folded.isspace() else []
    if unspaced:
        return words
    if not folded[0].isspace():
        words[0] = GLUE + words[0]
    if not folded[-1].isspace():
        words[-1] = words[-1] + GLUE
    return words


class GraphTooLarge(ValueError):
    """One template glues so many pieces into words that its word pairs would not fit."""


MAX_PAIRS = 2_000_000
"""The most word pairs one template may give (a safety bound: German's largest, a timer
sentence, gives ~8,600 with a home of 4 rooms on 2 floors; a template past it is left out of
the graph, said once at WARNING, and the rest of the graph serves)."""


def _unglue(pairs: set[tuple[str, str]]) -> set[tuple[str, str]]:
    """Word pairs with glued pieces joined into whole words and space nodes left out."""
    pieces = _Pieces(pairs)
    out: set[tuple[str, str]] = set()
    for node in pieces.starts():
        for word, end in pieces.words_from(node):
            out.update(pieces.pairs_after(word, end))
            if len(out) > MAX_PAIRS:
                raise GraphTooLarge(f"more than {MAX_PAIRS} word pairs")
    return out


class _Pieces:
    """A template graph's pieces (words, glued word pieces, space nodes) and what follows."""

    def __init__(self, pairs: set[tuple[str, str]]) -> None:
        self.following: dict[str, set[str]] = {}
        for a, b in pairs:
            self.following.setdefault(a, set()).add(b)
        self._after: dict[str, frozenset[tuple[str, bool]]] = {}
        self._words: dict[tuple[str, int], tuple[tuple[str, str], ...]] = {}

    def after(self, node: str) -> frozenset[tuple[str, bool]]:
        """The pieces that may follow ``node``, and whether a space is crossed to get there."""
        if node not in self._after:
            out: set[tuple[str, bool]] = set()
            todo, seen = [(n, False) for n in self.following.get(node, ())], set()
            while todo:
                nxt, spaced = todo.pop()
                if not nxt.startswith(SPACE):
                    out.add((nxt, spaced))
                elif nxt not in seen:
                    seen.add(nxt)
                    todo.extend((n, True) for n in self.following.get(nxt, ()))
            self._after[node] = frozenset(out)
        return self._after[node]

    def words_from(self, node: str, depth: int = 0) -> tuple[tuple[str, str], ...]:
        """(whole word, the piece it ends on) for a word starting at ``node``."""
        key = (node, depth)
        if key not in self._words:
            self._words[key] = self._spelled(node, depth)
        return self._words[key]

    def _spelled(self, node: str, depth: int) -> tuple[tuple[str, str], ...]:
        base = node.strip(GLUE)
        if not node.endswith(GLUE) or depth > 3:
            return ((base, node),)
        out = []
        ends_here = False
        for nxt, spaced in self.after(node):
            if _joins(nxt, spaced):
                out.extend((base + rest, end) for rest, end in self.words_from(nxt, depth + 1))
            else:
                ends_here = True
        if ends_here:
            out.append((base, node))
        return tuple(out)

    def starts(self) -> set[str]:
        """The pieces a word starts on: any piece unless it runs on from a glued one."""
        starts = {START} | {n for n, _ in self.after(START)}
        for node in self.following:
            glued = node.endswith(GLUE)
            starts.update(n for n, spaced in self.after(node) if not (glued and _joins(n, spaced)))
        return starts

    def pairs_after(self, word: str, end: str) -> Iterator[tuple[str, str]]:
        """``word`` (ending on the piece ``end``) and each whole word that may follow it."""
        for nxt, spaced in self.after(end):
            if end.endswith(GLUE) and _joins(nxt, spaced):
                continue  # part of this word, joined in words_from
            for word2, _ in self.words_from(nxt):
                if word and word2:
                    yield word, word2


def _joins(node: str, spaced: bool) -> bool:
    """Whether ``node`` runs on from the piece before it (a glued piece, no space between)."""
    return not spaced and node.startswith(GLUE)


@dataclass
class _Shape:
    """What an expression contributes to the graph: its possible first and last words, whether
    it may say nothing, and the word pairs inside it."""

    first: frozenset[str] = frozenset()
    last: frozenset[str] = frozenset()
    empty: bool = True
    pairs: set[tuple[str, str]] = field(default_factory=set)


def _then(a: _Shape, b: _Shape) -> _Shape:
    pairs = a.pairs | b.pairs
    pairs.update((x, y) for x in a.last for y in b.first)
    return _Shape(
        a.first | (b.first if a.empty else frozenset()),
        b.last | (a.last if b.empty else frozenset()),
        a.empty and b.empty,
        pairs,
    )


def _either(shapes: Iterable[_Shape], optional: bool = False) -> _Shape:
    out = _Shape(empty=optional)
    first: set[str] = set()
    last: set[str] = set()
    for shape in shapes:
        first |= shape.first
        last |= shape.last
        out.empty = out.empty or shape.empty
        out.pairs |= shape.pairs
    out.first, out.last = frozenset(first), frozenset(last)
    return out


def _words(words: list[str]) -> _Shape:
    if not words:
        return _Shape()
    return _Shape(frozenset(words[:1]), frozenset(words[-1:]), False, set(pairwise(words)))


class _GraphBuilder:
    def __init__(
        self,
        lists: dict[str, SlotList],
        rules: dict[str, Any],
        numbers: NumberWords,
        unspaced: bool = False,
    ):
        self.lists = lists
        self.rules = rules
        self.numbers = numbers
        self.unspaced = unspaced
        self._rule_shapes: dict[tuple[int, int], _Shape] = {}
        self._list_shapes: dict[str, _Shape] = {}

    def shape(self, expr: Expression, rules: dict[str, Any]) -> _Shape:
        """What ``expr`` contributes to the graph (its first and last words, its pairs)."""
        if isinstance(expr, TextChunk):
            pieces = _chunk_tokens(expr.text, f"{SPACE}{id(expr)}", self.unspaced)
            return _words(pieces)  # a number word a template spells is a word, not a number
        if isinstance(expr, Alternative):
            return _either((self.shape(i, rules) for i in expr.items), expr.is_optional)
        if isinstance(expr, Permutation):
            return self._permutation(expr, rules)
        if isinstance(expr, Sequence):
            out = _Shape()
            for item in expr.items:
                out = _then(out, self.shape(item, rules))
            return out
        if isinstance(expr, ListReference):
            return self._list(expr.list_name, rules)
        if isinstance(expr, RuleReference):
            return self._rule(expr.rule_name, rules)
        return _Shape()

    def _permutation(self, expr: Permutation, rules: dict[str, Any]) -> _Shape:
        """Items in any order: every item may follow every other."""
        shapes = [self.shape(i, rules) for i in expr.items]
        out = _either(shapes)
        out.empty = all(s.empty for s in shapes)
        for a in shapes:
            for b in shapes:
                if a is not b:
                    out.pairs.update((x, y) for x in a.last for y in b.first)
        return out

    def _rule(self, name: str, rules: dict[str, Any]) -> _Shape:
        """An expansion rule's shape, made once (a rule that refers to itself stops there)."""
        body = rules.get(name)
        if body is None:
            return _Shape()
        key = (id(body), id(rules))  # a rule may refer to the template's own local rules
        if key not in self._rule_shapes:
            self._rule_shapes[key] = _Shape()
            self._rule_shapes[key] = self.shape(body.expression, rules)
        return self._rule_shapes[key]

    def _list(self, name: str, rules: dict[str, Any]) -> _Shape:
        if name in self._list_shapes:
            return self._list_shapes[name]
        slot_list = self.lists.get(name)
        if isinstance(slot_list, RangeSlotList):
            shape = _words([NUMBER])
            shape.pairs.add((NUMBER, NUMBER))  # "twenty one"
        elif isinstance(slot_list, TextSlotList):
            shape = _either(self.shape(v.text_in, rules) for v in slot_list.values)
            shape.empty = False
        elif isinstance(slot_list, WildcardSlotList) or slot_list is None:
            shape = _words([ANY])  # free text: no transcript word is ever ANY, so no repair there
        else:
            shape = _Shape()
        self._list_shapes[name] = shape
        return shape


def _template_pairs(shape: _Shape) -> set[tuple[str, str]]:
    """A template's pairs with its starts and ends (pieces still glued)."""
    said = set(shape.pairs)
    said.update((START, w) for w in shape.first)
    said.update((w, END) for w in shape.last)
    return said


class NumberWords:
    """Number words of the language (hassil's own number engine) read as one graph word."""

    def __init__(self, language: str, top: int = 100) -> None:
        self.words: set[str] = set()
        try:
            from hassil.numbers import get_rbnf_engine

            engine = get_rbnf_engine(language)
            for number in range(top + 1):
                for text in engine.format_number(number).text_by_ruleset.values():
                    self.words.update(tokens(text))
        except (ValueError, ImportError):  # no number words for this language: digits only
            pass

    def token(self, word: str) -> str:
        return NUMBER if word.isdigit() or word in self.words else word


@dataclass(frozen=True)
class Candidate:
    """A repaired transcript: its text, what it cost and how many words it changed."""

    text: str
    cost: float
    edits: int


class SoundsLike(Protocol):
    """A language's sound of words (phonemes.py): how alike a word sounds to others, 0..1."""

    def alike(self, word: str, others: Sequence[str]) -> dict[str, float]: ...


_State = tuple[float, int, int, str, tuple[str, ...], int]
"""A reading being walked: (cost, edits, position, last graph word, words said, heard words
dropped)."""


def _openings(words: list[str], skip_words: Iterable[str]) -> list[int]:
    """Where a reading of ``words`` may start: at the first word, or after a skip phrase of
    several words that opens them ("could you", "would you mind"), which the walk's
    one-word skips cannot pass."""
    phrases = {tuple(tokens(s)) for s in skip_words}
    after = {len(p) for p in phrases if 1 < len(p) < len(words) and tuple(words[: len(p)]) == p}
    return [0, *sorted(after)]


@dataclass(frozen=True)
class _Walk:
    """What ``SentenceGraph.candidates`` walks: the words heard and its bounds."""

    words: list[str]
    surface: list[str]
    skip: set[str]
    wide: bool
    max_cost: float


class SentenceGraph:
    """The word pairs of every sentence the loaded templates allow for this home."""

    def __init__(self, intents: Intents, language: str, sounds: SoundsLike | None = None) -> None:
        self.sounds = sounds
        self.numbers = NumberWords(language)
        self.spaced = not counts_characters(language)
        """Whether the language spaces its words (else a word is a template chunk's run of
        letters: "打开", "厨房", "的", "灯")."""
        builder = _GraphBuilder(
            intents.slot_lists, intents.expansion_rules, self.numbers, not self.spaced
        )
        pairs: set[tuple[str, str]] = set()
        self.templates: dict[tuple[str, str], int] = {}
        """Each word pair's templates, as bits (bit i: the i-th sentence template says it)."""
        self.left_out: list[str] = []
        """Templates too large for the graph (``GraphTooLarge``), as written."""
        self.unruled = 0
        """Templates (bits) whose word pairs rule nothing out: left out, or with a wildcard
        slot (free text, any words)."""
        scopes: list[dict[str, Any]] = []
        index = 0
        for intent in intents.intents.values():
            for data in intent.data:
                rules = (
                    {**intents.expansion_rules, **data.expansion_rules}
                    if data.expansion_rules
                    else intents.expansion_rules
                )
                scopes.append(rules)  # kept while building: rule shapes are cached by its id
                for sentence in data.sentences:
                    bit = 1 << index
                    index += 1
                    try:
                        said = _unglue(_template_pairs(builder.shape(sentence.expression, rules)))
                    except GraphTooLarge:
                        self.left_out.append(sentence.text)
                        self.unruled |= bit
                        continue
                    if any(ANY in pair for pair in said):
                        self.unruled |= bit
                    # each template's pieces glued on their own: pieces of two templates
                    # never make a word together ("blinds" + "s", "tv" + "s" of another)
                    pairs |= said
                    for pair in said:
                        self.templates[pair] = self.templates.get(pair, 0) | bit
        self.following: dict[str, set[str]] = {}
        for a, b in pairs:
            self.following.setdefault(a, set()).add(b)
        self.vocabulary = sorted({w for pair in pairs for w in pair} - {START, END, NUMBER, ANY})
        self._keys = [jellyfish.metaphone(w) for w in self.vocabulary]
        self._similar = lru_cache(maxsize=4096)(self._similar_uncached)

    def __len__(self) -> int:
        return sum(len(v) for v in self.following.values())

    def similar(self, word: str) -> tuple[tuple[str, float], ...]:
        """Graph words alike in spelling or sound (similarity 0..1), best first."""
        return self._similar(word)

    def _similar_uncached(self, word: str) -> tuple[tuple[str, float], ...]:
        pool = 12 if self.sounds is None else SOUND_POOL
        spelled = process.extract(
            word, self.vocabulary, scorer=fuzz.ratio, score_cutoff=40, limit=pool
        )
        seen = {w for w, _, _ in spelled}
        key = jellyfish.metaphone(word)
        if key and self.sounds is None:
            sounded = process.extract(key, self._keys, scorer=fuzz.ratio, score_cutoff=60, limit=12)
            seen.update(self.vocabulary[index] for _, _, index in sounded)
        seen.discard(word)
        # a slip keeps about the word's length: "that" is never "thermostat"
        seen = {w for w in seen if max(len(w), len(word)) <= 2 * min(len(w), len(word))}
        # a word heard in one script is no slip of a word in another: "na" is not "风扇an"
        seen = {w for w in seen if _scripts(w) <= _scripts(word)}
        if self.sounds is None:
            scored = [(w, self._alike(word, key, w)) for w in seen]
        else:
            scored = self._heard_alike(word, sorted(seen))
        # ties by the word: the same ranking in every process (sets iterate by string hash)
        ranked = sorted(
            ((w, s) for w, s in scored if s >= MIN_SIMILARITY), key=lambda kv: (-kv[1], kv[0])
        )
        return tuple((w, round(s, 3)) for w, s in ranked[:8])

    @staticmethod
    def _alike(word: str, key: str, other: str) -> float:
        """Spelling and sound alike, averaged: "lines"/"blinds" 0.74, "like"/"lock" 0.75,
        "target"/"garage" 0.5 (sound apart), "of"/"on" 0.5."""
        spelling = fuzz.ratio(word, other) / 100
        other_key = jellyfish.metaphone(other)
        if not key or not other_key:
            return spelling
        return (spelling + fuzz.ratio(key, other_key) / 100) / 2

    def _heard_alike(self, word: str, others: list[str]) -> list[tuple[str, float]]:
        """Spelling and the language's sound alike, averaged; the same sound is 1.0."""
        assert self.sounds is not None
        heard = self.sounds.alike(word, others)
        out = []
        for other in others:
            spelling = fuzz.ratio(word, other) / 100
            sound = heard.get(other)
            if sound is None:
                out.append((other, spelling))
            else:
                out.append((other, 1.0 if sound >= 1.0 else (spelling + sound) / 2))
        return out

    def allows(self, a: str, b: str) -> bool:
        return b in self.following.get(a, ())

    def candidates(
        self, text: str, skip_words: Iterable[str] = (), limit: int = 12, wide: bool = False
    ) -> list[Candidate]:
        """The cheapest readings of ``text`` the graph allows (at most MAX_EDITS changed
        words, cost at most MAX_COST + MARGIN: the dearer ones are there to raise doubts),
        cheapest first; the text itself is not among them.

        ``wide``: a heard word may also become any graph word that fits there (cost 1), for a
        judge that can listen (the ASR engine scores them against the audio)."""
        max_cost = 1.0 + MAX_COST if wide else MAX_COST + MARGIN  # wide: one word changed freely
        surface = _TOKEN.findall(text.casefold())  # what is said back keeps its apostrophes
        words = [w.replace("'", "") for w in surface]
        if not words or len(words) > 24:
            return []
        skip = {w for s in skip_words for w in [s.casefold()] if " " not in w}
        walk = _Walk(words, surface, skip, wide, max_cost)
        heap: list[_State] = [(0.0, 0, k, START, (), k) for k in _openings(words, skip_words)]
        best: dict[tuple[int, str, int], float] = {}
        out: dict[str, Candidate] = {}
        while heap and len(out) < limit:
            cost, edits, pos, last, said, dropped = heapq.heappop(heap)
            if pos == len(words):
                self._finish(out, len(words), cost, edits, last, said, dropped)
                continue
            if best.get((pos, last, edits), 99.0) < cost - 1e-9:
                continue
            for state in self._grown(walk, (cost, edits, pos, last, said, dropped)):
                key = (state[2], state[3], state[1])
                if best.get(key, 99.0) <= state[0] - 1e-9:
                    continue
                best[key] = state[0]
                heapq.heappush(heap, state)
        return sorted(out.values(), key=lambda c: (c.cost, c.edits))

    def _finish(
        self,
        out: dict[str, Candidate],
        heard: int,
        cost: float,
        edits: int,
        last: str,
        said: tuple[str, ...],
        dropped: int,
    ) -> None:
        """A reading at the end of what was heard, kept when the graph may end there and as
        many words were kept as changed: "help" alone is not "hello", and a stutter dropped is
        not a word kept ("na na" is not "an")."""
        if self.allows(last, END) and edits and edits <= heard - edits - dropped:
            joined = " ".join(said)
            out.setdefault(joined, Candidate(joined, round(cost, 3), edits))

    def _grown(self, walk: _Walk, state: _State) -> Iterator[_State]:
        """The readings one step on from ``state`` within the walk's cost and edit bounds."""
        cost, edits, pos, last, said, dropped = state
        for step, spent, changed, emitted in self._steps(
            walk.words, pos, walk.skip, last, walk.wide
        ):
            if not changed and emitted:
                emitted = (walk.surface[pos],)
            new_cost, new_edits = cost + spent, edits + changed
            if new_cost > walk.max_cost + 1e-9 or new_edits > MAX_EDITS:
                continue
            node = self._through(last, emitted)
            if node is None:
                continue
            gone = dropped + (step if not emitted else 0)
            yield (new_cost, new_edits, pos + step, node, said + emitted, gone)

    def _through(self, last: str, emitted: tuple[str, ...]) -> str | None:
        """The graph word reached from ``last`` saying ``emitted`` (None: the graph has no
        such way; a number a range list takes stands for itself)."""
        state = last
        for word in emitted:
            token = word.replace("'", "")
            if not self.allows(state, token):
                token = self.numbers.token(token)
                if not self.allows(state, token):
                    return None
            state = token
        return state

    def _steps(
        self, words: list[str], pos: int, skip: set[str], last: str, wide: bool
    ) -> Iterable[tuple[int, float, int, tuple[str, ...]]]:
        """(words consumed, cost, words changed, graph words said) from ``pos``."""
        word = words[pos]
        if wide and self.numbers.token(word) != NUMBER:
            if pos + 1 < len(words):
                heard = words[pos + 1]
                onward = {heard, self.numbers.token(heard), *(w for w, _ in self.similar(heard))}
            else:
                onward = {END}
            for other in self.following.get(last, ()):
                fits = not onward.isdisjoint(self.following.get(other, ()))
                if fits and other not in (END, NUMBER, ANY) and other != word:
                    yield 1, 1.0, 1, (other,)
        yield 1, 0.0, 0, (word,)
        if word in skip:
            yield 1, 0.0, 0, ()
        if pos + 1 < len(words) and words[pos + 1] == word:  # a stutter: "the the"
            yield 1, 0.0, 0, ()
        if self.numbers.token(word) == NUMBER:
            return
        for other, similarity in self.similar(word):
            yield 1, 1.0 - similarity, 1, (other,)


@dataclass(frozen=True)
class Repair:
    """The repaired text the strict matcher took, with its cost and the runner-up's."""

    text: str
    cost: float
    result: Any
    why: str


def choose_repair(
    candidates: list[Candidate],
    match: Callable[[str], Any],
    meaning: Callable[[Any], Any],
    checks: int = CHECKS,
) -> Repair | None:
    """The cheapest candidate the strict matcher takes, unless another candidate with another
    meaning (``meaning(result)``) costs less than MARGIN more."""
    winner: tuple[Candidate, Any] | None = None
    for candidate in candidates[:checks]:
        if winner is not None and candidate.cost - winner[0].cost >= MARGIN:
            break
        result = match(candidate.text)
        if result is None:
            continue
        if winner is None:
            if candidate.cost > MAX_COST:
                return None  # the cheapest reading this home takes is too far from what was heard
            winner = (candidate, result)
        elif meaning(result) != meaning(winner[1]):
            return None  # two readings, two actions: neither is safe
    if winner is None:
        return None
    candidate, result = winner
    return Repair(candidate.text, candidate.cost, result, f"{candidate.edits} word(s) repaired")
