"""Local intent recognition with Home Assistant's own sentences (hassil + home-assistant-intents).

The ``tryfirst`` implementation of ``voiced_recognize``: templates first, an LLM (if
configured) only when they miss.
"""

from __future__ import annotations

import asyncio
import dataclasses
import difflib
import itertools
import logging
import math
import re
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import yaml
from hassil import Intents, RecognizeResult, merge_dict
from pydantic import BaseModel, ConfigDict, Field
from voiced_plugins.intent_hassil import homophones, languages, phonemes, wording
from voiced_plugins.intent_hassil.home import Home, HomeError, home_from_dict, load_home
from voiced_plugins.intent_hassil.narrowed import Narrowed
from voiced_plugins.intent_hassil.normalize import FILLER_WORDS, normalize
from voiced_plugins.intent_hassil.ranking import best_match
from voiced_plugins.intent_hassil.repair import MAX_PAIRS, SentenceGraph, choose_repair

from voiced.api.app import RunContext
from voiced.api.hooks import hookimpl
from voiced.api.intents import Intent, Transcript
from voiced.api.languages import primary

log = logging.getLogger(__name__)

CUSTOM_SENTENCE = "hass_custom_sentence"  # metadata key Home Assistant gives custom sentences
FUZZY_CUTOFF = 0.75
SOUND_READINGS = 32
"""Homophone rewritings of one Mandarin utterance tried against the templates (fewest words
first; each is a strict hassil match, ~1-5 ms)."""
GLUE_WORDS = frozenset(
    ("the", "a", "an", "my", "our", "your", "in", "on", "at", "of", "to", "for", "and",
     "is", "are", "all", "every", "this", "that")
)  # fmt: skip
ADDED_SENTENCES = Path(__file__).with_name("sentences")
"""Phrasings voiced adds to the pinned home-assistant-intents (per language)."""
WARM_UP = ("turn on the kitchen light", "set a timer for five minutes", "what time is it")

__all__ = [
    "HassilIntent",
    "HassilOptions",
    "Home",
    "HomeError",
    "intent_slots",
    "load_home",
    "resolve_path",
    "snap_names",
]


DEFAULT_HOME = "home.yaml"
EXAMPLE_HOME = Path(__file__).with_name("example_home.yaml")  # config/home.yaml, as shipped


class HassilOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    language: str | None = Field(
        None,
        description="one language only (en, de, zh-CN); unset: the config's language and every "
        "site's, each site matched in its own",
    )
    home: str = Field(
        DEFAULT_HOME,
        description="home file (floors/areas/entities); relative paths are looked up next to "
        "the config file, then in the working directory and its config/ folder; '' for none",
    )
    sentences: list[str] = Field(
        default_factory=lambda: ["sentences"],
        description="folders (or files) of custom sentence YAML, resolved like 'home'; "
        "missing folders are skipped",
    )
    builtin_sentences: bool = Field(True, description="load home-assistant-intents' sentences")
    added_sentences: bool = Field(
        True,
        description="with builtin_sentences: also voiced's own everyday forms the bundled data "
        "lacks in the language (plugins/intent_hassil/sentences/<language>.yaml, listed in "
        "docs/languages.md)",
    )
    fuzzy: bool = Field(
        True, description="when no template matches exactly, accept near-miss entity/area names"
    )
    repair: bool = Field(
        True,
        description="when nothing matches (names snapped too), repair misheard command words "
        "toward this home's own sentences; taken only as a unique, genuine template match",
    )
    site_areas: dict[str, str] = Field(
        default_factory=dict,
        description="site_id -> area name, so 'turn on the lights' acts in the room it was heard",
    )


class HassilIntent:
    """Recognizes Home Assistant intents from text with templates; see docs/intents.md."""

    name = "hassil"

    def __init__(self, options: HassilOptions, app: Any = None) -> None:
        self.options = options
        self.app = app
        self.home = Home()
        self.intents: Intents | None = None
        self.responses: dict[str, dict[str, str]] = {}
        self.errors: dict[str, str] = {}
        self.intent_slots: dict[str, list[str]] = {}
        self.sentence_files: list[Path] = []
        self._known_names: list[str] = []
        self.graph: SentenceGraph | None = None
        self.narrowed: Narrowed | None = None
        """The strict matcher's templates narrowed by the graph (None: every template)."""
        self.sounds: homophones.SoundIndex | None = None  # Mandarin: words by their pinyin
        self._template_words: set[str] = set()
        self._repairs: dict[tuple[str, str], Intent | None] = {}  # the engine asks twice
        self.language = "en"  # home-assistant-intents' name of this grammar's language
        self.grammars: dict[str, HassilIntent] = {}  # every language loaded, this one too

    def for_language(self, language: str | None) -> HassilIntent:
        """The grammar of ``language`` (a site's); this one when that language isn't loaded."""
        if not language or language == self.language:
            return self
        try:
            return self.grammars.get(languages.intents_tag(language), self)
        except ValueError:
            return self

    # -- life cycle -------------------------------------------------------------------------

    def load(self) -> None:
        wanted = languages.configured(self.options.language, self.app)
        self._load_language(wanted[0], first=True)
        self.grammars = {self.language: self}
        for language in wanted[1:]:  # a site that speaks another language: its own grammar
            other = HassilIntent(self.options.model_copy(update={"language": language}), self.app)
            other._load_language(language, first=False, home=self.home)
            self.grammars[language] = other

    def _load_language(self, language: str, first: bool, home: Home | None = None) -> None:
        started = time.perf_counter()
        self.language = language
        self.home = home if home is not None else self._load_home()
        data = self._language_data()
        for path in self.sentence_files:
            if languages.file_is_for(path, language, first):
                merge_dict(data, _custom_sentences(path))
        self.intents = Intents.from_dict(data)
        if primary(language) == "zh" and homophones.available():
            self._template_words = homophones.words_of(_template_texts(data))
        self.use_home(self.home, wait=True)
        self.responses = data.get("responses", {}).get("intents", {})
        self.errors = data.get("responses", {}).get("errors", {})
        self.intent_slots = intent_slots(data)
        for text in WARM_UP:  # builds hassil's number-word tries, so the first command is fast
            self._recognize(text, {})
        log.info(
            "hassil %s: %d intents, %d entities, %d areas, %d custom sentence files in %.2fs",
            language,
            len(self.intents.intents),
            len(self.home.entities),
            len(self.home.areas),
            len(self.sentence_files),
            time.perf_counter() - started,
        )

    def close(self) -> None:
        self.intents = None
        for other in self.grammars.values():
            if other is not self:
                other.close()

    def use_home(self, home: Home | dict[str, Any], wait: bool = False) -> None:
        """Swap the home (entities, areas, floors) without reloading the sentences (``wait``:
        build the sentence graph here even on an event loop)."""
        self.home = home if isinstance(home, Home) else home_from_dict(home)
        for other in self.grammars.values():
            if other is not self:
                other.use_home(self.home)
        self._known_names = sorted(
            {n for e in self.home.entities for n in e.names}
            | {n for a in self.home.areas for n in (a.name, *a.aliases)}
            | {n for f in self.home.floors for n in (f.name, *f.aliases)},
            key=lambda n: (-len(n), n),
        )
        if self.intents is not None:
            self.narrowed = None  # the graph is of the old lists until it is rebuilt
            self.intents.slot_lists.update(self.home.slot_lists())
            if self.options.repair:
                self._build_graph(wait)
            if self._template_words:
                names = homophones.words_of(self._known_names)
                self.sounds = homophones.SoundIndex.of(self._template_words | names)
        self._repairs.clear()

    def _build_graph(self, wait: bool) -> None:
        """The home's sentence graph (≈ 0.1-0.3 s per home change): right here, or in a worker
        thread when called on a running event loop (a home refresh from Home Assistant), the
        old graph serving until the new one is there (every repair is re-checked strictly
        against the new home's lists anyway)."""
        intents, language = self.intents, self.language
        assert intents is not None
        if wait or not _on_event_loop():
            self._use_graph(_sentence_graph(intents, language))
            return

        def build() -> None:
            graph = _sentence_graph(intents, language)
            if self.intents is intents:
                self._use_graph(graph)
                self._repairs.clear()

        threading.Thread(target=build, name="hassil-sentence-graph", daemon=True).start()

    def _use_graph(self, graph: SentenceGraph) -> None:
        assert self.intents is not None
        self.graph = graph
        skip = (*self.skip_words(), *self.intents.skip_words)
        self.narrowed = Narrowed(self.intents, graph, skip)

    def not_understood(self, language: str) -> str | None:
        """Home Assistant's "Sorry, I couldn't understand that" in ``language``, if loaded."""
        grammar = self.for_language(language)
        if grammar is self and languages.intents_tag_or_none(language) != self.language:
            return None
        return grammar.errors.get("no_intent")

    # -- what the ASR asks (plugins/asr_whisper/choose.py) --------------------------------

    def is_command(self, text: str, exact: bool = False) -> bool:
        """Whether ``text`` is a command on this home: a template match, possibly after
        snapping near-miss names or repairing command words (``exact``: one that needed
        neither)."""
        if self.intents is None:
            return False
        if exact:  # a strict match: no need to try snapping or repair (they cost)
            cleaned = self.cleaned(text)
            return bool(cleaned) and self._recognize(cleaned, {}) is not None
        return self.recognize(text) is not None

    def command_candidates(self, texts: list[str], limit: int = 32) -> list[str]:
        """Sentences of this home a word or two from any of ``texts`` (the decoder's
        hypotheses), nearest first: for an engine that can score them against the audio."""
        if self.graph is None:
            return []
        if not self.graph.spaced:
            return self._sound_candidates(texts, limit)
        found: dict[str, float] = {}
        for text in texts:
            written = self.cleaned(text)
            heard = phonemes.respelled(written, self.graph)
            if heard != written:  # homophones put right (a strict match or not)
                found.setdefault(heard.casefold(), 0.0)
            for candidate in self.graph.candidates(heard, self.skip_words(), 48, wide=True):
                found[candidate.text] = min(found.get(candidate.text, 9.0), candidate.cost)
        return sorted(found, key=found.__getitem__)[:limit]

    def _sound_candidates(self, texts: list[str], limit: int) -> list[str]:
        """Commands of this home that sound like ``texts`` (Mandarin: homophones.py), in the
        order of their rewritings, each a strict match on something the home has."""
        if self.sounds is None:
            return []
        found: dict[str, None] = {}
        for text in texts:
            heard = homophones.run_together(self.cleaned(text))
            if len(heard) < homophones.MIN_SYLLABLES:
                continue
            readings = itertools.islice(self.sounds.readings(heard), SOUND_READINGS)
            for reading in readings:
                if reading not in found and self._strict(reading, {}) is not None:
                    found[reading] = None
                if len(found) >= limit:
                    return list(found)
        return list(found)

    def sounds_of(self, text: str) -> list[str]:
        """The syllables of ``text`` by their sound (Mandarin: folded toneless pinyin, one a
        character; homophones.py), for a recognizer grounding what it found in what it heard
        (plugins/asr_whisper/constrained.py); [] in other languages."""
        if self.sounds is None:
            return []
        heard = homophones.run_together(self.cleaned(text))
        return [s for s in homophones.sounds(heard) if s.isascii() and s.isalpha()]

    def written_forms(self, word: str) -> tuple[str, ...]:
        """Other ways a decoder writes ``word`` of this grammar: Chinese in the other script
        ("廚房" for "厨房": Whisper writes either); none in other languages."""
        other = languages.other_script(word, self.language)
        return (other,) if other != word else ()

    def command_meaning(self, text: str) -> tuple[Any, ...] | None:
        """What ``text`` does on this home as a strict template match that acts on something
        the home has (no snapping, no repair), or None."""
        if self.intents is None:
            return None
        intent = self._strict(text, {})
        return None if intent is None else _meaning(intent)

    def command_graph(self) -> SentenceGraph | None:
        """This home's word graph (which word may follow which), for an engine that decodes
        within the home's sentences (plugins/asr_whisper/constrained.py); None without one."""
        return self.graph

    def skip_words(self) -> tuple[str, ...]:
        """Words and phrases said around a command that mean nothing here (fillers,
        politeness): the ones hassil skips in this grammar's language."""
        return FILLER_WORDS if self.language == "en" else wording.skip_words(self.language)

    def prompt_words(self) -> str:
        """The home's names as a Whisper prompt: areas, floors, then entities."""
        names = [n for a in self.home.areas for n in (a.name, *a.aliases)]
        names += [n for f in self.home.floors for n in (f.name, *f.aliases)]
        names += [n for e in self.home.entities for n in e.names]
        return ", ".join(dict.fromkeys(names)) + "."

    # -- the hook ---------------------------------------------------------------------------

    @hookimpl(tryfirst=True)
    def voiced_recognize(self, transcript: Transcript, context: RunContext) -> Intent | None:
        grammar = self.for_language(context.language)  # the site's language
        intent = grammar.recognize(transcript.text, self.intent_context(context))
        if intent is None and transcript.text.strip():
            reason = "no sentence template matched" + (" (fuzzy too)" if self.options.fuzzy else "")
            context.data.setdefault("intent_errors", []).append(
                {"recognizer": "hassil", "reason": reason}
            )
        return intent

    def intent_context(self, context: RunContext | None) -> dict[str, Any]:
        """Where the person is: ``context.data['area']`` or the site's configured area."""
        if context is None:
            return {}
        area = context.data.get("area") or self.options.site_areas.get(context.site_id)
        return {"area": area} if area else {}

    def recognize(self, text: str, intent_context: dict[str, Any] | None = None) -> Intent | None:
        """Text -> the best-matching intent, or None."""
        if self.intents is None:
            raise RuntimeError("hassil intent stage used before load()")
        cleaned = self.cleaned(text)
        if not cleaned:
            return None
        intent_context = intent_context or {}
        result = self._recognize(cleaned, intent_context)
        if result is not None:
            return self._to_intent(text, result, 1.0)
        snapped = self._snapped(text, cleaned, intent_context) if self.options.fuzzy else None
        if snapped is not None:
            return snapped
        if self.sounds is not None and self.options.repair:
            return self._by_sound(text, cleaned, intent_context)
        if self.graph is not None and self.graph.spaced:
            return self._repaired(text, cleaned, intent_context)
        return None

    def _snapped(self, text: str, cleaned: str, intent_context: dict[str, Any]) -> Intent | None:
        """The intent of ``cleaned`` with near-miss names snapped to the home's, or None. When
        it acts on nothing the home has, the weakest snap is left out and the match tried
        again, while one matches (a template's own word snapped onto a name: "lights" onto
        "Spotlights"); the first match is kept when none acts on something (the answer then
        says so)."""
        first: Intent | None = None
        cutoff = FUZZY_CUTOFF
        while True:
            fixed, score = snap_names(cleaned, self._known_names, cutoff)
            if fixed == cleaned:
                return first
            result = self._recognize(fixed, intent_context)
            if result is None:
                return first
            intent = self._to_intent(text, result, score)
            if not _acts_on_nothing(intent):
                return intent
            first = first or intent
            cutoff = math.nextafter(score, 2.0)  # without the weakest snap

    def cleaned(self, text: str) -> str:
        """``text`` as this grammar's templates spell it: its script, unicode forms, edge
        punctuation, numbers and units (wording.py)."""
        return wording.reworded(normalize(languages.prepare(text, self.language)), self.language)

    # -- internals --------------------------------------------------------------------------

    def _recognize(self, text: str, intent_context: dict[str, Any]) -> RecognizeResult | None:
        narrowed = self.narrowed
        return best_match(
            text,
            self.intents if narrowed is None else narrowed.intents_for(text),
            skip_words=self.skip_words(),
            intent_context=intent_context,
            language=self.language,
            best_metadata_key=CUSTOM_SENTENCE,
            best_slot_name="name",
        )

    def _remembered(
        self, key: tuple[str, str], text: str, find: Callable[[], Intent | None]
    ) -> Intent | None:
        """``find()``'s answer for ``key``, worked out once (the engine asks twice) and said
        back with this ``text``."""
        if key in self._repairs:
            found = self._repairs[key]
            return None if found is None else dataclasses.replace(found, text=text)
        found = find()
        if len(self._repairs) >= 512:
            self._repairs.clear()
        self._repairs[key] = found
        return found

    def _repaired(self, text: str, cleaned: str, intent_context: dict[str, Any]) -> Intent | None:
        """The one reading of ``cleaned``, a few misheard words away, that this home's
        templates take and that acts on something the home has (see repair.py)."""

        def match(candidate: str) -> Intent | None:
            return self._strict(candidate, intent_context, text)

        def find() -> Intent | None:
            assert self.graph is not None
            heard = phonemes.respelled(cleaned, self.graph)  # homophones: no repair needed
            if heard != cleaned and (intent := match(heard)) is not None:
                intent.data["fuzzy"] = True
                intent.data["repair"] = {"text": heard, "cost": 0.0, "why": "homophones"}
                return intent
            candidates = self.graph.candidates(heard, FILLER_WORDS)
            repair = choose_repair(candidates, match, _meaning)
            if repair is None:
                return None
            intent = repair.result
            intent.data["fuzzy"] = True
            intent.data["repair"] = {"text": repair.text, "cost": repair.cost, "why": repair.why}
            return dataclasses.replace(intent, confidence=round(max(0.0, 1.0 - repair.cost), 3))

        return self._remembered((cleaned, repr(sorted(intent_context.items()))), text, find)

    def _by_sound(self, text: str, cleaned: str, intent_context: dict[str, Any]) -> Intent | None:
        """Mandarin written with other characters of the same sound (homophones.py): the one
        meaning that rewritings of ``cleaned`` match strictly, on something the home has."""

        def find() -> Intent | None:
            assert self.sounds is not None
            heard = homophones.run_together(cleaned)
            if len(heard) < homophones.MIN_SYLLABLES:
                return None
            found: Intent | None = None
            for index, reading in enumerate(self.sounds.readings(heard)):
                if index >= SOUND_READINGS:
                    break
                intent = self._strict(reading, intent_context, text)
                if intent is None:
                    continue
                if found is not None and _meaning(found) != _meaning(intent):
                    return None  # two readings, two actions: neither
                if found is None:
                    intent.data["fuzzy"] = True
                    intent.data["homophones"] = {"text": reading, "heard": heard}
                    found = dataclasses.replace(intent, confidence=0.8)
            return found

        key = ("sound:" + cleaned, repr(sorted(intent_context.items())))
        return self._remembered(key, text, find)

    def _strict(
        self, candidate: str, intent_context: dict[str, Any], text: str = ""
    ) -> Intent | None:
        """A strict match of ``candidate`` that acts on something this home has."""
        result = self._recognize(self.cleaned(candidate), intent_context)
        if result is None:
            return None
        intent = self._to_intent(text or candidate, result, 1.0)
        if _acts_on_nothing(intent):
            return None  # "the fan in the garage" when the garage has no fan
        return intent

    def _to_intent(self, text: str, result: RecognizeResult, confidence: float) -> Intent:
        slots = {e.name: _plain(e.value) for e in result.entities_list}
        matched = []
        domain = next((d for p, d in INTENT_DOMAINS if result.intent.name.startswith(p)), None)
        if _about_entities(result.intent.name, slots) or result.intent.name in READ_ANY:
            matched = self.home.match({**slots, "domain": domain} if domain else slots)
        data: dict[str, Any] = {
            "response": result.response,
            "entities": [e.id for e in matched],
            "context": dict(result.context),
            "metadata": dict(result.intent_metadata or {}),
            "slot_text": {e.name: e.text_clean for e in result.entities_list},
            "custom": bool((result.intent_metadata or {}).get(CUSTOM_SENTENCE)),
        }
        if confidence < 1.0:
            data["fuzzy"] = True
        return Intent(result.intent.name, slots, text, round(confidence, 3), "hassil", data)

    def _load_home(self) -> Home:
        if not self.options.home:
            return Home()
        try:
            path = self._resolve(self.options.home, must_exist=True)
        except HomeError:
            if self.options.home != DEFAULT_HOME:
                raise
            # no config anywhere (a bare install): the example home, so commands still work
            path = EXAMPLE_HOME
            log.warning("hassil: no %s found; using the example home %s", DEFAULT_HOME, path)
        return load_home(path)

    def _language_data(self) -> dict[str, Any]:
        self.sentence_files = []
        for entry in self.options.sentences:
            path = self._resolve(entry, must_exist=False)
            if path.is_dir():
                self.sentence_files.extend(sorted(path.glob("**/*.yaml")))
            elif path.is_file():
                self.sentence_files.append(path)
        data: dict[str, Any] = {"language": self.language, "intents": {}}
        if self.options.builtin_sentences:
            import home_assistant_intents

            bundled = home_assistant_intents.get_intents(self.language)
            if bundled is None:
                raise ValueError(f"home-assistant-intents cannot load {self.language!r}")
            data = bundled
            added = ADDED_SENTENCES / f"{self.language}.yaml"
            if self.options.added_sentences and added.is_file():
                extra = yaml.safe_load(added.read_text(encoding="utf-8"))
                merge_dict(data, {"intents": extra["intents"]})
        return data

    def _resolve(self, entry: str, must_exist: bool) -> Path:
        return resolve_path(entry, self.app, must_exist)


def resolve_path(entry: str, app: Any = None, must_exist: bool = True) -> Path:
    """An absolute path, or one found next to the config file, in the working directory or
    its ``config/`` folder (in that order)."""
    path = Path(entry).expanduser()
    if path.is_absolute():
        candidates = [path]
    else:
        candidates = []
        config_file = getattr(getattr(app, "settings", None), "config_file", None)
        if config_file:
            candidates.append(Path(config_file).parent / path)
        candidates += [Path.cwd() / path, Path.cwd() / "config" / path]
    for candidate in candidates:
        if candidate.exists():
            return candidate
    if must_exist:
        tried = ", ".join(str(c) for c in candidates)
        raise HomeError(
            f"{entry!r} not found (looked in: {tried}); set the stage's 'home' option to an "
            "existing file, or '' for no home"
        )
    return candidates[0]


def _custom_sentences(path: Path) -> dict[str, Any]:
    """A custom sentence file, its templates marked so they win over the bundled ones."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise ValueError(f"custom sentences {path}: not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise ValueError(f"custom sentences {path}: expected a mapping with 'intents:'")
    data.pop("language", None)
    for name, intent in (data.get("intents") or {}).items():
        if not isinstance(intent, dict) or not isinstance(intent.get("data"), list):
            raise ValueError(f"custom sentences {path}: intents.{name} needs a 'data:' list")
        for item in intent["data"]:
            item.setdefault("metadata", {})[CUSTOM_SENTENCE] = True
    return data


def snap_names(text: str, names: list[str], cutoff: float = FUZZY_CUTOFF) -> tuple[str, float]:
    """Replace runs of words that nearly spell one of ``names``, best matches first; a run
    that two names spell equally nearly is left as it is (``_rivals``).

    Returns the new text and the lowest similarity of the replacements (1.0: none made).
    """
    words = text.split()
    candidates = _name_runs([w.casefold().strip(".,!?") for w in words], names, cutoff)
    taken = [False] * len(words)
    chosen: list[tuple[int, int, str]] = []
    lowest = 1.0
    # Prefer close spellings of long names: "kitchen cieling" is the Kitchen ceiling light,
    # not the Kitchen area followed by noise.
    ranked = sorted(candidates, key=lambda c: (-(c[0] ** 4) * len(c[3]), -c[0], c[3], c[2]))
    for ratio, size, start, name in ranked:
        if any(taken[start : start + size]):
            continue
        taken[start : start + size] = [True] * size
        if ratio < 1.0 and not _rivals((ratio, size, start, name), ranked):
            chosen.append((start, size, name))
            lowest = min(lowest, ratio)
    for start, size, name in sorted(chosen, reverse=True):
        words[start : start + size] = [name]
    return " ".join(words), lowest


def _name_runs(
    folded: list[str], names: list[str], cutoff: float
) -> list[tuple[float, int, int, str]]:
    """(similarity, words, first word, name) of each run of the ``folded`` words that spells
    a name at least ``cutoff`` nearly."""
    candidates: list[tuple[float, int, int, str]] = []
    for name in names:
        target = name.casefold()
        exact = len(target.split())
        for size in {exact, exact + 1, exact - 1} - {0}:  # ASR splits and joins words too
            for start in range(len(folded) - size + 1):
                window = folded[start : start + size]
                if window[0] in GLUE_WORDS or window[-1] in GLUE_WORDS:
                    continue  # "the temperature" is not "Outside Temperature"
                spoken = " ".join(window)
                matcher = difflib.SequenceMatcher(None, spoken, target)
                if matcher.real_quick_ratio() < cutoff or matcher.quick_ratio() < cutoff:
                    continue
                ratio = 1.0 if spoken == target else matcher.ratio()
                if ratio >= cutoff:
                    candidates.append((ratio, size, start, name))
    return candidates


def _rivals(snap: tuple[float, int, int, str], ranked: list[tuple[float, int, int, str]]) -> bool:
    """Whether another name spells the same words (or some of them) as nearly as ``snap``'s:
    "best lamp" is the Desk Lamp as much as the Salt Lamp, and which one a snap picked
    would be chance. The words stay as heard, for the sentence repair (or the recognizer's
    rescoring, on the audio) to read."""
    ratio, size, start, name = snap
    return any(
        other_ratio == ratio
        and len(other) == len(name)
        and other.casefold() != name.casefold()
        and other_start < start + size
        and start < other_start + other_size
        for other_ratio, other_size, other_start, other in ranked
    )


INTENT_DOMAINS = (
    ("HassClimate", "climate"), ("HassGetWeather", "weather"), ("HassLightSet", "light"),
    ("HassMedia", "media_player"), ("HassSetVolume", "media_player"), ("HassVacuum", "vacuum"),
    ("HassLawnMower", "lawn_mower"), ("HassFanSetSpeed", "fan"), ("HassList", "todo"),
)  # fmt: skip
"""Intents that only ever act on one domain (Home Assistant's handlers filter the same way)."""

READ_ANY = frozenset(("HassClimateGetTemperature", "HassGetWeather"))
"""Questions that, naming nothing, are about every entity of their domain (as in HA)."""

NOT_ABOUT_ENTITIES = re.compile(r"Timer|HassGetCurrent|HassNevermind|HassRespond|HassBroadcast")


def _acts_on_nothing(intent: Intent) -> bool:
    """Whether ``intent`` names things of the home but none of them is there."""
    return _about_entities(intent.name, intent.slots) and not intent.data["entities"]


def _about_entities(intent_name: str, slots: dict[str, Any]) -> bool:
    """Whether name/area slots point at home entities (a timer's name does not)."""
    if NOT_ABOUT_ENTITIES.search(intent_name):
        return False
    return any(k in slots for k in ("name", "area", "floor", "domain", "device_class"))


_LIST_REF = re.compile(r"\{([\w-]+)(?::([\w-]+))?\}")
_RULE_REF = re.compile(r"<([\w-]+)>")


def intent_slots(data: dict[str, Any]) -> dict[str, list[str]]:
    """Each intent's slot names, read from its templates (``{list}``, ``{list:slot}``), through
    expansion rules (``<name>``), plus fixed ``slots:``."""
    shared: dict[str, str] = dict(data.get("expansion_rules") or {})

    def refs(template: str, rules: dict[str, str], seen: frozenset[str] = frozenset()) -> set[str]:
        found = {slot or name for name, slot in _LIST_REF.findall(template)}
        for rule in _RULE_REF.findall(template):
            if rule not in seen and rule in rules:
                found |= refs(rules[rule], rules, seen | {rule})
        return found

    found: dict[str, set[str]] = {}
    for name, intent in (data.get("intents") or {}).items():
        slots = found.setdefault(name, set())
        for item in intent.get("data") or []:
            slots.update((item.get("slots") or {}).keys())
            rules = {**shared, **(item.get("expansion_rules") or {})}
            for sentence in item.get("sentences") or []:
                slots |= refs(sentence, rules)
    return {name: sorted(slots) for name, slots in sorted(found.items())}


def _template_texts(data: dict[str, Any]) -> Iterator[str]:
    """Every piece of template text of a grammar: sentences, expansion rules, list values."""
    yield from (data.get("expansion_rules") or {}).values()
    for intent in (data.get("intents") or {}).values():
        for item in intent.get("data") or []:
            yield from item.get("sentences") or []
            yield from (item.get("expansion_rules") or {}).values()
    for spec in (data.get("lists") or {}).values():
        for value in (spec or {}).get("values") or []:
            yield str(value.get("in", "")) if isinstance(value, dict) else str(value)


def _sentence_graph(intents: Intents, language: str) -> SentenceGraph:
    """The repair's sentence graph; a template too large for it is left out, said once."""
    graph = SentenceGraph(intents, language, phonemes.for_language(language))
    if graph.left_out and language not in _WARNED_LEFT_OUT:
        _WARNED_LEFT_OUT.add(language)
        log.warning(
            "hassil: sentence repair for %s leaves out %d template(s) that give more than %d "
            "word pairs each (the rest repairs as usual): %s",
            language,
            len(graph.left_out),
            MAX_PAIRS,
            "; ".join(graph.left_out[:3]),
        )
    return graph


_WARNED_LEFT_OUT: set[str] = set()


def _on_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


TARGET_SLOTS = frozenset({"name", "area", "floor", "domain", "device_class"})
"""Slots that only say which entities an intent acts on (its ``entities`` say it for them)."""


def _meaning(intent: Intent) -> tuple[Any, ...]:
    """What an intent would do: two repairs that differ here are two different actions. The
    same entities named another way are the same action ("turn on the bedroom fans", area
    and domain, and "turn on the bedroom fan", its name, both turn on fan.bedroom)."""
    entities = tuple(sorted(intent.data.get("entities", [])))
    slots = tuple(
        sorted((k, str(v)) for k, v in intent.slots.items() if not (entities and k in TARGET_SLOTS))
    )
    return intent.name, slots, entities


def _plain(value: Any) -> Any:
    """Whole-number floats as ints (hassil yields 2.0 for "2" but 2 for "two")."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


@hookimpl
def voiced_register_stages(register: Any) -> None:
    register(
        "intent", "hassil", HassilIntent, options=HassilOptions,
        description="Home Assistant intents with hassil templates (home-assistant-intents)",
    )  # fmt: skip
