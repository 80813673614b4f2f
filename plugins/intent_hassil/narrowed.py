"""The templates a sentence can match, by its word pairs: hassil asked over those only.

A strict match tries every template of every intent (657 for English on this repo's home,
~4 ms a sentence), and the ASR engine asks about hundreds of sentences an utterance it heard
badly (constrained.py's ``first_words``). The sentence graph (repair.py) knows, for each word
pair, the templates that say it; a sentence's templates are those that say all of its pairs,
from its start to its end (a number, in digits or words, read as the graph's number too). A
template left out of the graph or with a wildcard slot (whose words the graph does not know)
is always asked. A sentence with a word the graph does not know (a name the graph was built
without) or a skip phrase (hassil drops it, and the pairs around it are none of a
template's) is asked of every template, as before."""

from __future__ import annotations

import dataclasses
import functools
import itertools
import operator
import threading
from collections import OrderedDict
from collections.abc import Iterable

from hassil.intents import Intent, Intents

from .repair import END, NUMBER, START, SentenceGraph, tokens

KEPT = 256
"""Narrowed grammars kept (one per set of templates; a set repeats across a home's sentences)."""


class Narrowed:
    """``intents`` narrowed to a sentence's templates, by ``graph`` (built from ``intents``)."""

    def __init__(self, intents: Intents, graph: SentenceGraph, skip: Iterable[str]) -> None:
        self.intents = intents
        self.graph = graph
        self.skip = {tuple(tokens(phrase)) for phrase in skip} - {()}
        self._kept: OrderedDict[int, Intents] = OrderedDict()
        self._lock = threading.Lock()

    def intents_for(self, text: str) -> Intents:
        """The intents with only the templates that may say ``text`` (all where the graph
        cannot tell)."""
        bits = self.templates_of(text)
        if bits is None:
            return self.intents
        bits |= self.graph.unruled
        with self._lock:
            if bits in self._kept:
                self._kept.move_to_end(bits)
                return self._kept[bits]
        narrowed = _only(self.intents, bits)
        with self._lock:
            self._kept[bits] = narrowed
            if len(self._kept) > KEPT:
                self._kept.popitem(last=False)
        return narrowed

    def templates_of(self, text: str) -> int | None:
        """The templates (bits) that say every word pair of ``text``; None: the graph cannot
        tell (no words, a word it lacks, a skip phrase, a language without spaces)."""
        graph = self.graph
        words = tokens(text)
        if not words or not graph.spaced or self._has_skip_phrase(words):
            return None
        said, before = -1, [START]
        for word in [*words, END]:
            readings = self._readings(word)
            if not readings:
                return None
            pairs = itertools.product(before, readings)
            said &= functools.reduce(operator.or_, (graph.templates.get(p, 0) for p in pairs))
            before = readings
        return said

    def _readings(self, word: str) -> list[str]:
        """What ``word`` may be in the graph: itself, or a number (digits, or a number word,
        which a template may also say as a word: German's "ein" of "schalte ... ein")."""
        graph = self.graph
        if word == END:
            return [END]
        readings = [word] if word in graph.following else []
        if graph.numbers.token(word) == NUMBER:
            readings.append(NUMBER)
        return readings

    def _has_skip_phrase(self, words: list[str]) -> bool:
        for phrase in self.skip:
            n = len(phrase)
            if any(tuple(words[i : i + n]) == phrase for i in range(len(words) - n + 1)):
                return True
        return False


def _only(intents: Intents, bits: int) -> Intents:
    """``intents`` with the templates of ``bits`` only (bit i: the i-th template, in the order
    the graph numbered them), their parsed sentences shared."""
    kept: dict[str, Intent] = {}
    index = 0
    for intent in intents.intents.values():
        datas = []
        for data in intent.data:
            sentences = [s for i, s in enumerate(data.sentences, index) if bits >> i & 1]
            index += len(data.sentences)
            if sentences:
                narrowed = dataclasses.replace(data, sentence_texts=[s.text for s in sentences])
                narrowed.__dict__["sentences"] = sentences  # hassil's cached_property, filled
                datas.append(narrowed)
        if datas:
            kept[intent.name] = Intent(intent.name, datas)
    return dataclasses.replace(intents, intents=kept)
