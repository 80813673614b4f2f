"""Decoding inside the home's sentences: Whisper's decoder searching only what this home takes.

The idea of Home Assistant's speech-to-phrase and Rhasspy: a closed vocabulary cannot give
"port slide". The intent stage's word graph (``command_graph``: which word may follow which
in this home's template sentences, names filled in, ``<#>`` for a number) becomes, per word,
a trie of the tokens that may spell the next word (" turn", " Turn", digits, "%" glued on).
A beam search then runs Whisper's decoder on the already computed encoder output, each step
taking only tokens the trie allows, until a word the graph lets end a sentence is followed by
the end of text.

What it finds is a *candidate*, never a verdict: the engine hands the finished sentences to
the home rescoring (rescore.py), which scores them against the audio beside what Whisper
heard freely and keeps one only when it is a strict command that scores nearly as well as
the free reading. Chatter is still transcribed freely: the closest home sentence to it
scores far below what was said.

The search asks the decoder one question, the next token's log-probabilities after each
prefix (``Decoder.next_logprobs``: ct2_scoring.py on CTranslate2).
"""

from __future__ import annotations

import functools
import heapq
import itertools
import math
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from voiced.api.recognition import NextLogprobs, has

from .common import words_of

START, END, NUMBER, ANY = "<s>", "</s>", "<#>", "<*>"
TAIL = "<tail>"
"""Where a tail's search starts (``TokenGrammar.anywhere``): before any word of the graph."""
OPEN = "\x01"
"""Marks an opening phrase's word in the search (``TokenGrammar.opening``): no graph word."""
BEAM = 24
"""Readings kept per step (case and spelling variants of one reading count once). Where
each tuned value came from: docs/asr.md, "Tuned constants"."""
BEAM_CHARACTERS = 32
"""``BEAM`` for a language written in characters (Mandarin), whose grammar says each
sentence in both scripts."""
MAX_TOKENS = 32
"""The longest command searched for, in tokens."""
RESULTS = 4
"""Finished sentences handed on (best first)."""
PRUNE = 3.0
"""A partial sentence whose mean log-probability a token falls this far below the free
reading's is dropped: above the rescoring's limit (rescore.py DROP), for the dip of a
misheard word on the way."""
END_FLOOR = -3.0
"""The least log-probability of a found sentence's end after its last word: one the audio
goes on past is a part of what was said, not a command ("the lights on in the kitchen" of
"I left the lights on in the kitchen all night"). The rescoring's forced scores do not
count it."""
PRUNE_AFTER = 3
"""Tokens before pruning starts (a misheard first word costs much)."""
_CONTRACTION = re.compile(r"^(.+?)(s|t|re|ll|ve|d|m)$")


@dataclass
class _Node:
    children: dict[int, _Node] = field(default_factory=dict)
    words: set[str] = field(default_factory=set)  # graph words spelled by the path to here


class TokenGrammar:
    """The word graph as token tries: for each word, the tokens that may spell its successor."""

    def __init__(
        self,
        following: dict[str, set[str]],
        numbers: set[str],
        tokenizer: Any,
        templates: dict[tuple[str, str], int] | None = None,
        spaced: bool = True,
        openings: Iterable[str] = (),
        written: Callable[[str], Iterable[str]] | None = None,
    ):
        self.following = following
        self.written = written
        """Other ways the decoder may write a word (the home's ``written_forms``: Chinese in
        the other script, which Whisper writes as often); spelled too."""
        self.templates = templates
        self.spaced = spaced
        """Whether words are written with a space before them (else, as in Chinese, each
        word's tokens follow the last word's directly)."""
        self.numbers = sorted(numbers)
        self.tokenizer = tokenizer
        self._spellings: dict[str, list[list[int]]] = {}
        self._tries: dict[frozenset[str], _Node] = {}
        marks = ".?!" if spaced else ".?!。"  # Chinese ends with its own full stop too
        self.end_tokens = [
            t for t in (tokenizer.eot, *(_single(tokenizer, p) for p in marks)) if t is not None
        ]
        self.comma = _single(tokenizer, ",")
        self.opening: dict[str, tuple[str, frozenset[str]]] = {}
        """Each word of an opening phrase (``openings``: the home's skip words, "could you",
        "um") by its own key: (the word as spelled, the key of the phrase's next word; none
        after its last, where the sentence starts: one phrase opens it, not a chain of them,
        "Okay, I want you to go ahead and pause the Roku")."""
        firsts = self._openings(openings)
        self.starts = frozenset(following.get(START, ())) - {END, ANY} | firsts
        """What may open a sentence once an opening phrase is allowed before it."""
        self.inner = frozenset(w for nxt in following.values() for w in nxt) - {END, ANY}
        """Every word the graph has after another: what a sentence's tail may start with."""

    def _openings(self, phrases: Iterable[str]) -> frozenset[str]:
        """Key each word of ``phrases`` (into ``opening``); the keys of their first words."""
        firsts = set()
        for phrase in dict.fromkeys(p.casefold().strip() for p in phrases):
            words = phrase.split() if self.spaced else [phrase]
            keys = [f"{OPEN}{phrase}{OPEN}{i}" for i in range(len(words))]
            for i, (key, word) in enumerate(zip(keys, words, strict=True)):
                self.opening[key] = (word, frozenset(keys[i + 1 : i + 2]))
            if keys:
                firsts.add(keys[0])
        return frozenset(firsts)

    def start(self, openings: bool) -> _Node:
        """The trie of a sentence's first word; with ``openings``, of an opening phrase's too
        ("Could you turn off the lights": hassil skips "could you", and the audio says it)."""
        return self._trie(self.starts) if openings and self.opening else self.after(START)

    def after(self, word: str) -> _Node:
        """The trie of the words that may follow ``word`` (cached per set of successors)."""
        if word in self.opening:  # the phrase's next word, or after it the sentence
            nxt = self.opening[word][1]
            return self._trie(nxt) if nxt else self.after(START)
        return self._trie(frozenset(self.following.get(word, ())) - {END, ANY})

    def _trie(self, nxt: frozenset[str]) -> _Node:
        if nxt not in self._tries:
            root = _Node()
            for successor in nxt:
                for spelled in self.spellings(successor):
                    node = root
                    for token in spelled:
                        node = node.children.setdefault(token, _Node())
                    node.words.add(successor)
            self._tries[nxt] = root
        return self._tries[nxt]

    def build_all(self) -> None:
        """Every word's trie, now (≈ 0.2 s and 10 MB for config/home.yaml) rather than one by
        one as searches first reach a word: the grammar's memory is then all there once it is
        built, not growth through the following hours (#16)."""
        for word in (START, *self.following, *self.opening):
            self.after(word)
        self.start(True)
        self.anywhere()

    def anywhere(self) -> _Node:
        """The trie of every word the graph has after another: what a sentence's tail may
        start with, after a first word the decoder misheard (tails.py)."""
        return self._trie(self.inner)

    def ends(self, word: str) -> bool:
        return END in self.following.get(word, ())

    def fits(self, said: int, before: str, word: str) -> int:
        """The templates (bits) that still say a sentence after ``word`` follows ``before``
        in it, of those that said it so far (``said``); -1: the graph does not tell. An
        opening phrase is said before any template: what follows it opens one."""
        if self.templates is None or word in self.opening or before == TAIL:
            return said
        if before in self.opening:
            before = START
        return said & self.templates.get((before, word), 0)

    def spellings(self, word: str) -> list[list[int]]:
        """Token sequences Whisper may write ``word`` with: with a leading space, lower or
        capitalized, apostrophes back in ("whats" -> "what's"); a number as digits or the
        language's number words; "%" glued to the number before it; each in its ``written``
        forms too."""
        if word not in self._spellings:
            if word == NUMBER:
                words = [str(n) for n in range(101)] + self.numbers
            elif word == "%":
                words = ["%"]
            else:
                words = [self.opening[word][0] if word in self.opening else word]
                if match := _CONTRACTION.match(words[0]):
                    words.append(f"{match[1]}'{match[2]}")
            forms = [*words, *(w for form in words for w in self._written(form))]
            texts = set()
            for form in forms:
                if form == "%":
                    texts.update({"%", " %"})
                elif not self.spaced:
                    texts.update({form, " " + form} if form.isascii() else {form})
                else:
                    texts.update({" " + form, " " + form[:1].upper() + form[1:]})
            self._spellings[word] = [t for t in map(self.tokenizer.encode, sorted(texts)) if t]
        return self._spellings[word]

    def _written(self, form: str) -> Iterable[str]:
        return () if self.written is None or form.isascii() else self.written(form)


def _single(tokenizer: Any, text: str) -> int | None:
    tokens = tokenizer.encode(text)
    return tokens[0] if len(tokens) == 1 else None


_AFTER_OPENING = " ,，、"
"""What may stand between an opening phrase and its sentence, left off the sentence."""
_AFTER_COMMA = _Node()  # no tokens of its own: after "kitchen," the next word starts afresh


@dataclass(frozen=True)
class _Beam:
    tokens: tuple[int, ...]
    logprob: float
    word: str  # the last whole word (START at first)
    node: _Node  # where the current word's tokens have got to in the trie after ``word``
    comma: bool = False
    pairs: frozenset[tuple[str, str]] = frozenset()  # word pairs said: none twice (no loops)
    said: int = -1  # the templates (bits) that say every word pair so far: one sentence's words
    words: tuple[str, ...] = ()  # the sentence's whole words so far, as the graph spells them
    opened: int = 0  # tokens of the opening phrase ("Could you") before the sentence


@dataclass(frozen=True)
class Constrained:
    """A sentence of the home the decoder found: its text and mean log-probability a token."""

    text: str
    avg_logprob: float
    end_logprob: float = 0.0  # of its end ("." "?" "!" or end of text) after its last word
    opening: str = ""
    """The opening phrase as written ("Could you"), or ""."""

    @property
    def sentence(self) -> str:
        """The text after its opening phrase ("turn on the light" of "Could you turn on the
        light"); the whole text where none opens it."""
        return self.text[len(self.opening) :].strip(_AFTER_OPENING) if self.opening else self.text


def constrained_decode(
    steps: NextLogprobs,
    tokenizer: Any,
    grammar: TokenGrammar,
    beam: int = BEAM,
    max_tokens: int = MAX_TOKENS,
    results: int = RESULTS,
    free_logprob: float = 0.0,
    first: list[np.ndarray] | None = None,
    one_template: bool = True,
    openings: bool = False,
    after: tuple[int, ...] = (),
) -> list[Constrained]:
    """The best sentences of the grammar for this audio (``steps``: the decoder's next-token
    log-probabilities in one utterance's window), best first by mean log-probability a
    token (the end included); the search keeps ``beam`` partial ones by total
    log-probability for ``max_tokens`` steps, dropping one whose mean falls PRUNE below
    ``free_logprob`` (Whisper's own reading's).
    ``first`` (a list) receives the first token's log-probabilities. ``one_template``: every
    word pair of a sentence from one template (the graph's pairs alone mix templates: "what
    is the" + "the next" gave "what is the next"). ``openings``: the grammar's opening
    phrases may come first ("Could you ..."). ``after``: tokens the decoder is held to first
    (a first word it misheard, tails.py): the search finds the rest of a sentence, from any
    word of the graph, and each found sentence's ``opening`` is their text."""
    fits = grammar.fits if one_template else (lambda said, before, word: -1)
    search = _Search(grammar, fits, free_logprob - PRUNE, len(after))
    prompt = [*tokenizer.sot_sequence, tokenizer.no_timestamps]
    if after:
        beams = [_Beam(after, 0.0, TAIL, grammar.anywhere(), opened=len(after))]
    else:
        beams = [_Beam((), 0.0, START, grammar.start(openings))]
    for step in range(max_tokens):
        if not beams:
            break
        rows = steps(prompt, [b.tokens for b in beams])
        if step == 0 and first is not None:
            first.append(rows[0])
        grown: dict[tuple[Any, ...], _Beam] = {}
        bar = -math.inf
        for b, row in zip(beams, rows, strict=True):
            search.grow(b, row, step, grown, bar)
            if len(grown) >= beam:
                bar = heapq.nlargest(beam, (g.logprob for g in grown.values()))[-1]
        beams = sorted(grown.values(), key=lambda b: -b.logprob)[:beam]
    found: dict[str, Constrained] = {}  # the best spelling of each sentence, opened or not
    for tokens, (mean, ending, opened) in sorted(search.done.items(), key=lambda kv: -kv[1][0]):
        opening = tokenizer.decode(list(tokens[:opened])).strip()
        said = Constrained(tokenizer.decode(list(tokens)).strip(), mean, ending, opening)
        found.setdefault(said.sentence.casefold(), said)
    return list(found.values())[:results]


@dataclass
class _Search:
    """One constrained search's rules and the sentences it has finished."""

    grammar: TokenGrammar
    fits: Callable[[int, str, str], int]
    floor: float
    """Least mean log-probability a token of a partial sentence past ``PRUNE_AFTER``."""
    held: int = 0
    """Tokens the decoder was held to before the search (``after``): not the sentence's."""
    done: dict[tuple[int, ...], tuple[float, float, int]] = field(default_factory=dict)
    """Finished sentences' tokens -> (mean, end) log-probability and opening words."""

    def grow(
        self,
        b: _Beam,
        row: np.ndarray,
        step: int,
        grown: dict[tuple[Any, ...], _Beam],
        bar: float = -math.inf,
    ) -> None:
        """Every reading one token longer than ``b`` into ``grown`` (the best per reading),
        and ``b`` ended into ``done`` where the grammar lets it end; ``bar``: the least
        log-probability of the beam's readings grown so far (one below it can't be kept)."""
        for token, word, node, comma, ended in _steps(b, self.grammar):
            if token is not None and b.logprob + float(row[token]) < bar:
                continue
            said = self.fits(b.said, b.word, word) if ended else b.said
            if not said:  # no one template says these words together: "what is the next"
                continue
            if token is None:  # the end: "." "?" "!" or end of text, whichever is likeliest
                self._end(b, row, said, word)
                continue
            new = self._next(b, row, step, token, word, node, comma, ended, said)
            if new is None:
                continue
            # one beam per reading: "What is" and "what is" are one hypothesis, not two, and
            # so are "So, lower the" and "lower the" (else openings crowd other readings out)
            key = (new.words, id(node), comma)
            if key not in grown or grown[key].logprob < new.logprob:
                grown[key] = new

    def _end(self, b: _Beam, row: np.ndarray, said: int, word: str) -> None:
        if not self.fits(said, word, END):
            return
        ending = max(float(row[t]) for t in self.grammar.end_tokens)
        mean = (b.logprob + ending) / (len(b.tokens) - self.held + 1)
        done = (mean, ending, b.opened)
        self.done[b.tokens] = max(self.done.get(b.tokens, (-99.0, 0.0, 0)), done)

    def _next(
        self,
        b: _Beam,
        row: np.ndarray,
        step: int,
        token: int,
        word: str,
        node: _Node,
        comma: bool,
        ended: bool,
        said: int,
    ) -> _Beam | None:
        """``b`` and ``token``, or None where a word pair comes twice or it falls too low."""
        pairs = b.pairs
        if ended:  # a word ended: no word pair twice (the graph's cycles), one comma
            pair = (",", ",") if comma else (b.word, word)
            if pair in pairs:
                return None
            pairs = pairs | {pair}
        logprob = b.logprob + float(row[token])
        if step >= PRUNE_AFTER and logprob / (step + 1) < self.floor:
            return None  # far below what Whisper heard freely: chatter, stop early
        opens = ended and word in self.grammar.opening  # an opening word: no sentence word
        words = (*b.words, word) if ended and not opens else b.words
        opened = len(b.tokens) if opens else b.opened
        return _Beam((*b.tokens, token), logprob, word, node, comma, pairs, said, words, opened)


def _steps(b: _Beam, grammar: TokenGrammar) -> list[tuple[int | None, str, _Node, bool, bool]]:
    """(token or None for the end, last whole word, trie node, is a comma, a word ended)."""
    steps: list[tuple[int | None, str, _Node, bool, bool]] = [
        (token, b.word, child, False, False) for token, child in b.node.children.items()
    ]
    for word in b.node.words:  # a whole word ends here: the next one may start, or the end
        after = grammar.after(word).children.items()
        steps.extend((t, word, child, False, True) for t, child in after)
        if grammar.ends(word):
            steps.append((None, word, b.node, False, True))
        if grammar.comma is not None:
            steps.append((grammar.comma, word, _AFTER_COMMA, True, True))
    if b.comma:  # after "kitchen,": the next word of the trie after ``word``
        after = grammar.after(b.word).children.items()
        steps.extend((t, b.word, child, False, False) for t, child in after)
    return steps


class GrammarCache:
    """Token grammars by word graph (the intent stage builds a new graph per home): the last
    ``kept`` graphs' (a daemon has one home; a pool worker serves the homes of its front ends).
    Safe to ask from several threads (a worker prepares a home while it serves another)."""

    def __init__(self, kept: int = 1) -> None:
        self.kept = max(1, kept)
        self._grammars: OrderedDict[int, tuple[Any, TokenGrammar]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, checker: Any, tokenizer: Any) -> TokenGrammar | None:
        graph_of = getattr(checker, "command_graph", None)
        graph = graph_of() if callable(graph_of) else None
        if graph is None:
            return None
        with self._lock:
            kept = self._grammars.get(id(graph))
            if kept is not None and kept[0] is graph:
                self._grammars.move_to_end(id(graph))
                return kept[1]
        grammar = TokenGrammar(
            graph.following,
            graph.numbers.words,
            tokenizer,
            getattr(graph, "templates", None),
            getattr(graph, "spaced", True),
            skip_words_of(checker),
            getattr(checker, "written_forms", None),
        )
        grammar.build_all()
        with self._lock:
            self._grammars[id(graph)] = (graph, grammar)  # the graph held: its id stays its own
            while len(self._grammars) > self.kept:
                self._grammars.popitem(last=False)
        return grammar


def skip_words_of(home: Any) -> tuple[str, ...]:
    """The home's words that mean nothing around a command (``skip_words``), if it says."""
    return tuple(home.skip_words()) if has(home, "skip_words") else ()


class WithConstrained:
    """A rescorer whose candidates start with the commands the constrained search found."""

    def __init__(self, rescorer: Any, found: Found) -> None:
        self.rescorer = rescorer
        self.found = found

    def command_candidates(self, texts: list[str]) -> list[str]:
        found = self.found.commands
        return list(dict.fromkeys([*found, *self.rescorer.command_candidates(texts)]))

    def command_variants(self, texts: list[str]) -> list[str]:
        return self.found.first_word(texts)

    def command_meaning(self, text: str) -> Any:
        return self.rescorer.command_meaning(text)


@dataclass(frozen=True)
class Found:
    """What the constrained search offers the rescoring of one utterance."""

    commands: list[str]
    """The home's commands it found, best first."""
    first_word: Callable[[list[str]], list[str]]
    """Commands that put another first word to sentences which are none (``first_words``,
    the likeliest one each): for the rescoring's best-scored candidates that mean nothing
    ("in the back door locked" -> "is the back door locked")."""
    ungrounded: frozenset[str] = frozenset()
    """Of ``commands``, those no reading grounds (``grounded``): the rescoring holds them to
    the stricter ``rescore.DROP_FULL``."""

    def grounded(self) -> Found:
        """The same less the commands no reading grounds."""
        kept = [text for text in self.commands if text not in self.ungrounded]
        return Found(kept, self.first_word)


def commands_found(
    steps: NextLogprobs,
    tokenizer: Any,
    grammar: TokenGrammar,
    heard: list[tuple[str, float]],
    rescorer: Any,
    beam: int = BEAM,
    one_template: bool = True,
    command_first_words: bool = True,
    openings: bool = False,
) -> Found:
    """The constrained search's sentences that are commands on this home, best first; the
    search runs a few tokens past the longest reading the decoder gave freely (``heard``:
    those readings, best first, with their mean log-probabilities). ``command_first_words``:
    the first words offered (``first_words``) are the likeliest that make a command, and
    the rescoring may ask for more (``Found.first_word``); else the likeliest, of found
    sentences only. ``openings``: the grammar's opening phrases may come first."""
    first: list[np.ndarray] = []
    found = constrained_decode(
        steps,
        tokenizer,
        grammar,
        max_tokens=search_length(tokenizer, heard),
        free_logprob=heard[0][1] if heard else 0.0,
        first=first,
        beam=beam,
        one_template=one_template,
        openings=openings,
    )
    said, unheard = _said(found, [text for text, _ in heard], grammar, rescorer)
    is_command = commands_of(rescorer)
    if not first:
        return _found(
            [t for t in said if is_command(t)], [t for t in unheard if is_command(t)], lambda t: []
        )
    likely = first_token_fit(grammar, first[0])

    def offer(texts: list[str]) -> list[str]:  # the commands, then others' first words
        others = [text for text in texts if not is_command(text)]
        if not command_first_words:
            offered = [t for t in first_words(grammar, others, likely) if is_command(t)]
        else:
            offered = first_words(grammar, others, likely, is_command=is_command)
        return [*(text for text in texts if is_command(text)), *offered]

    more = (
        (lambda texts: first_words(grammar, texts, likely, 1, is_command))
        if command_first_words
        else (lambda texts: [])
    )
    return _found(offer(said), offer(unheard), more)


def search_length(tokenizer: Any, heard: list[tuple[str, float]]) -> int:
    """Tokens a search runs: a few past the longest reading the decoder gave freely
    (``heard``), at most ``MAX_TOKENS``."""
    longest = max((len(tokenizer.encode(" " + text)) for text, _ in heard), default=8)
    return min(MAX_TOKENS, longest + 4)


def first_token_fit(grammar: TokenGrammar, row: np.ndarray) -> Callable[[str], float]:
    """How well the audio's first token (``row``: its log-probabilities) fits a word: the
    log-probability of the first token of its likeliest spelling."""

    def likely(word: str) -> float:
        return max(float(row[spelled[0]]) for spelled in grammar.spellings(word))

    return likely


def commands_of(rescorer: Any) -> Callable[[str], bool]:
    """Whether a text is a command on the home (a strict match), each text asked once."""

    @functools.cache
    def is_command(text: str) -> bool:
        return rescorer.command_meaning(text) is not None

    return is_command


def _found(
    grounded: list[str], ungrounded: list[str], first_word: Callable[[list[str]], list[str]]
) -> Found:
    """The grounded commands first, then those no reading grounds, marked."""
    kept = dict.fromkeys(grounded)
    unheard = [text for text in dict.fromkeys(ungrounded) if text not in kept]
    return Found([*kept, *unheard], first_word, frozenset(unheard))


def _said(
    found: list[Constrained], readings: list[str], grammar: TokenGrammar, rescorer: Any
) -> tuple[list[str], list[str]]:
    """The found sentences the audio ends after (END_FLOOR): those a reading grounds, and
    those none does but that are long enough to be (``groundable``). Grounded: by a word
    in common, or, for a language without spaces whose grammar hears sounds (``sounds_of``),
    by syllables in common (Whisper writes Mandarin it hears badly with other characters of
    the same sound). An opening phrase a reading does not ground is left off: the audio's
    first words were heard as something else, and a phrase of the home's skip words takes
    any of them ("I'd like you to turn off the light in the garage" for the chatter "I
    bought a new sonoff plug for the garage", heard "I'm all to new son of blood from the
    garage")."""
    sounds = getattr(rescorer, "sounds_of", None)
    if grammar.spaced or not callable(sounds):

        def heard_in(text: str) -> bool:
            return grounded(text, readings)
    else:
        heard = [sounds(text) for text in readings]

        def heard_in(text: str) -> bool:
            return grounded_by_sound(sounds(text), heard)

    kept: dict[str, None] = {}
    unheard: dict[str, None] = {}
    for c in (c for c in found if c.end_logprob >= END_FLOOR):
        if heard_in(c.sentence):
            kept[c.text if not c.opening or heard_in(c.opening) else c.sentence] = None
        elif groundable(c.sentence, grammar.spaced, sounds):
            unheard[c.sentence] = None
    return list(kept), list(unheard)


GROUNDING_LETTERS = 3
"""Least letters of the word a found sentence shares with a reading: "I", "a", "is", "on"
are in most sentences and ground nothing."""


def grounded(text: str, heard: list[str]) -> bool:
    """Whether a sentence the search found has a word (of GROUNDING_LETTERS or more) in
    common with a reading the decoder gave. The search reaches every sentence of the home,
    and a forced score does not count the audio a short sentence leaves unsaid: chatter
    ("put the kettle on for tea", heard "but the candle on for the...") came within the
    limit as "what can I say"."""

    def words(sentence: str) -> set[str]:
        return {w for w in words_of(sentence) if len(w) >= GROUNDING_LETTERS}

    said = words(text)
    return any(said & words(reading) for reading in heard)


GROUNDING_SYLLABLES = 2
"""Least syllables a found Chinese sentence shares with a reading (``grounded_by_sound``):
"现在几点了" with "先載起殿兒" (xian zai ... dian), not "暂停" with "完帝卧室的台灯"."""


def groundable(sentence: str, spaced: bool, sounds: Callable[[str], list[str]] | None) -> bool:
    """Whether a reading could ground ``sentence`` at all: it has a word of GROUNDING_LETTERS
    (or, without spaces, GROUNDING_SYLLABLES syllables). One that could not ("嗨", "is it
    on") says too little of the audio to be taken on its score alone."""
    if not spaced and callable(sounds):
        return len(set(sounds(sentence))) >= GROUNDING_SYLLABLES
    return any(len(w) >= GROUNDING_LETTERS for w in words_of(sentence))


def grounded_by_sound(said: list[str], heard: list[list[str]]) -> bool:
    """``grounded`` for a language without spaces, by the syllables of a found sentence
    and of each reading (the home grammar's ``sounds_of``: Mandarin's folded pinyin):
    Whisper writes Mandarin it hears badly with other characters of the same sound."""
    wanted = set(said)
    return any(len(wanted & set(reading)) >= GROUNDING_SYLLABLES for reading in heard)


FIRST_WORDS = 4
"""First words tried per sentence, the likeliest for the audio's first token."""


OPENING = 3
"""Words after a new first word that must go on one template with it (``first_words``):
most first words open no sentence that goes on so ("is on the chandelier"), and each
strict match costs time."""


def _opens_one_template(grammar: TokenGrammar, words: list[str]) -> bool:
    """Whether some template says ``words`` in a row, as far as the graph knows them (a
    number or a word it lacks ends the check: the strict match judges those)."""
    said = -1
    for before, word in itertools.pairwise(words):
        if word not in grammar.following:
            break
        said = grammar.fits(said, before, word)
        if not said:
            return False
    return True


def first_words(
    grammar: TokenGrammar,
    texts: list[str],
    likely: Callable[[str], float],
    per_text: int = FIRST_WORDS,
    is_command: Callable[[str], bool] = lambda text: True,
) -> list[str]:
    """Sentences that put another first word to ``texts`` (found sentences that are no
    command) or in front of them, the ``per_text`` likeliest that are commands: the first
    word is where Whisper slips most and the search least recovers ("Go on the chandelier",
    "so on the patio heater": "turn" was said; the decoder's first token gave it too little
    to stay in the beam, and "is", "open", "our" fit that token better but make no command).
    The audio judges them (rescore.py), as every other candidate."""
    starts = grammar.following.get(START, set()) - {END, NUMBER, ANY}
    out: dict[str, None] = {}
    for text in texts:
        words = text.split()
        if not words:
            continue
        rest = [w.casefold().strip(",.?!") for w in words]
        for keep in (words, words[1:]):  # in front of the first word, or instead of it
            if not keep:
                continue
            kept = rest[len(words) - len(keep) :]
            fits = [
                s
                for s in starts
                if s != rest[0]
                and kept[0] in grammar.following.get(s, ())
                and _opens_one_template(grammar, [START, s, *kept[:OPENING]])
            ]
            made = (" ".join([s, *keep]) for s in sorted(fits, key=lambda s: (-likely(s), s)))
            for sentence in itertools.islice(filter(is_command, made), per_text):
                out.setdefault(sentence, None)
    return list(out)
