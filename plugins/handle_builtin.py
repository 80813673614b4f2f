"""Built-in handlers: time, date, timers, "never mind", and Home Assistant's spoken responses.

Two handler stages:

- ``builtin``: HassGetCurrentTime/Date, the timer intents (start, cancel, cancel all, status,
  pause, resume, add/remove time) and HassNevermind. A timer that runs out emits a ``timer``
  event and is announced with ``app.say`` at the site that started it.
- ``responses`` (``trylast``): for an intent no other handler took (e.g. HassTurnOn when no
  MQTT action is configured), says Home Assistant's response ("Turned on the light") and
  marks ``Response.data["acted"] = False`` so observers know nothing was switched.

Answers use Home Assistant's response templates from home-assistant-intents where they exist.
"""

from __future__ import annotations

import datetime as dt
import functools
import itertools
import logging
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from voiced.api.app import RunContext
from voiced.api.events import Event, EventType
from voiced.api.hooks import hookimpl
from voiced.api.intents import Intent, Response
from voiced.api.languages import intents_language
from voiced.api.text import split_sentences

log = logging.getLogger(__name__)

TIMER_INTENTS = (
    "HassStartTimer", "HassCancelTimer", "HassCancelAllTimers", "HassTimerStatus",
    "HassPauseTimer", "HassUnpauseTimer", "HassIncreaseTimer", "HassDecreaseTimer",
)  # fmt: skip
HANDLED = ("HassGetCurrentTime", "HassGetCurrentDate", "HassNevermind", *TIMER_INTENTS)


LANGUAGE_OPTION = Field(
    None, description="answer in this language only; unset: in the language of the run's site"
)


class BuiltinOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    language: str | None = LANGUAGE_OPTION
    announcement: str = Field(
        "Your {name}timer is done.",
        description="said when a timer runs out; {name} is the timer's name and a space, or ''",
    )
    max_timers: int = Field(20, gt=0, description="refuse to start more timers than this")


class ResponsesOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    language: str | None = LANGUAGE_OPTION


@dataclass
class Timer:
    """One kitchen timer; runs on a threading.Timer so it needs no loop to be cancelled."""

    id: int
    seconds: float
    site_id: str
    name: str | None = None
    area: str | None = None
    start: tuple[int, int, int] = (0, 0, 0)
    left_at_pause: float | None = None
    deadline: float = 0.0
    handle: threading.Timer | None = field(default=None, repr=False)

    @property
    def is_active(self) -> bool:
        return self.left_at_pause is None

    def seconds_left(self) -> float:
        if self.left_at_pause is not None:
            return self.left_at_pause
        return max(0.0, self.deadline - time.monotonic())

    def as_template(self) -> dict[str, Any]:
        """The shape Home Assistant's timer templates read."""
        left = round(self.seconds_left())
        hours, rest = divmod(left, 3600)
        minutes, seconds = divmod(rest, 60)
        if hours:
            seconds = 0
        return {
            "is_active": self.is_active,
            "start_hours": self.start[0],
            "start_minutes": self.start[1],
            "start_seconds": self.start[2],
            "rounded_hours_left": hours,
            "rounded_minutes_left": minutes,
            "rounded_seconds_left": seconds,
            "total_seconds_left": left,
            "name": self.name or "",
            "area": self.area or "",
        }


class TimerError(Exception):
    """A timer request that cannot be done; the message is Home Assistant's error key."""


class BuiltinHandler:
    """Time, date and timers; see the module docstring."""

    name = "builtin"

    def __init__(self, options: BuiltinOptions, app: Any = None) -> None:
        self.options = options
        self.app = app
        self.responses: dict[str, dict[str, str]] = {}
        self.errors: dict[str, str] = {}
        self.timers: dict[int, Timer] = {}
        self._ids = itertools.count(1)
        self._lock = threading.RLock()

    def load(self) -> None:
        self.responses, self.errors = _language_responses(self.app, _default(self))

    def fixed_answers(self) -> list[str]:
        """What this handler may say that never changes (the daemon caches their audio)."""
        own = {name: self.responses[name] for name in HANDLED if name in self.responses}
        timer_errors = [self.errors.get(key) or text for key, text in _PLAIN_ERRORS.items()]
        answers = fixed_answers(own, _home(self.app))
        return answers + [text for text in timer_errors if text not in answers]

    def anticipated_answers(self, now: dt.datetime | None = None) -> list[str]:
        """What this handler may say soon, as things are now (the daemon synthesizes them
        ahead of need): the time this minute and the next, today's date, "Timer set for …"
        for the common durations, and the first sentence of the timer status when more
        follow ("2 running timers.": the time left changes every second)."""
        now = now or dt.datetime.now()
        answers = []
        for moment in (now, now + dt.timedelta(minutes=1)):
            intent = Intent("HassGetCurrentTime")
            fallback = moment.strftime("%-I:%M %p")
            answers.append(self._say(intent, fallback, self.responses, time=moment.time()))
        intent = Intent("HassGetCurrentDate")
        fallback = now.strftime("%B %-d, %Y")
        answers.append(self._say(intent, fallback, self.responses, date=now.date()))
        english = _default(self).split("-")[0].casefold() == "en"
        for unit, amounts in COMMON_TIMERS:
            for amount in amounts:
                fallback = f"Timer set for {_spoken_duration(_duration({unit: amount}))}"
                # as the person may say it, and as Whisper may write it: "five", "5"
                for spoken in (ENGLISH_NUMBERS[amount], str(amount)) if english else (amount,):
                    intent = Intent("HassStartTimer", {unit: amount},
                                    data={"slot_text": {unit: str(spoken)}})  # fmt: skip
                    answers.append(self._say(intent, fallback, self.responses))
        with self._lock:
            timers = [t.as_template() for t in self.timers.values()]
        if timers:
            status = self._say(Intent("HassTimerStatus"), "", self.responses, timers=timers)
            first, *rest = split_sentences(status)
            if rest:
                answers.append(first)
        return [text for text in dict.fromkeys(answers) if text]

    def close(self) -> None:
        with self._lock:
            for timer in self.timers.values():
                if timer.handle is not None:
                    timer.handle.cancel()
            self.timers.clear()

    async def stop(self) -> None:
        self.close()

    # -- the hook ---------------------------------------------------------------------------

    @hookimpl
    def voiced_handle(self, intent: Intent, context: RunContext) -> Response | None:
        if intent.name not in HANDLED:
            return None
        data: dict[str, Any] = {"acted": True}
        extra: dict[str, Any] = {}
        language = self.options.language or context.language
        responses, errors = _language_responses(self.app, language)
        now = dt.datetime.now()
        try:
            if intent.name == "HassNevermind":
                return Response("", self.name, data=data)
            if intent.name == "HassGetCurrentTime":
                extra["time"] = now.time()
                fallback = now.strftime("%-I:%M %p")
            elif intent.name == "HassGetCurrentDate":
                extra["date"] = now.date()
                fallback = now.strftime("%B %-d, %Y")
            else:
                fallback = self._timer(intent, context, data, extra)
        except TimerError as exc:
            key = str(exc)
            speech = errors.get(key) or _PLAIN_ERRORS.get(key, "Sorry, I couldn't do that.")
            return Response(speech, self.name, data={"acted": False, "error": key})
        speech = self._say(intent, fallback, responses, **extra)
        return Response(speech, self.name, data=data)

    # -- timers -----------------------------------------------------------------------------

    def start_timer(
        self,
        seconds: float,
        site_id: str = "default",
        name: str | None = None,
        area: str | None = None,
        start: tuple[int, int, int] | None = None,
    ) -> Timer:
        if seconds <= 0:
            raise TimerError("timer_not_found")
        with self._lock:
            if len(self.timers) >= self.options.max_timers:
                raise TimerError("too_many_timers")
            start = start or _split(seconds)
            timer = Timer(next(self._ids), float(seconds), site_id, name, area, start)
            self.timers[timer.id] = timer
            self._arm(timer, seconds)
        self._emit(timer, "started")
        return timer

    def _timer(
        self, intent: Intent, context: RunContext, data: dict[str, Any], extra: dict[str, Any]
    ) -> str:
        """The plain answer to a timer intent, after acting on it."""
        slots = intent.slots
        if intent.name == "HassStartTimer":
            return self._start_asked(slots, context, data)
        if intent.name == "HassCancelAllTimers":
            return self._cancel_all(slots, data, extra)
        if intent.name == "HassTimerStatus":
            with self._lock:
                chosen = self._find(slots, context, many=True)
                extra["timers"] = [t.as_template() for t in chosen]
            data["timer_ids"] = [t.id for t in chosen]
            return _plain_status(chosen)
        with self._lock:
            timer = self._find(slots, context, many=False)[0]
            data["timer_id"] = timer.id
            if intent.name == "HassCancelTimer":
                self._remove(timer, "cancelled")
                return "Timer cancelled"
            if intent.name == "HassPauseTimer":
                self._pause(timer)
                return "Timer paused"
            if intent.name == "HassUnpauseTimer":
                self._unpause(timer)
                return "Timer resumed"
            return self._add_time(timer, intent.name, slots)

    def _start_asked(self, slots: dict[str, Any], context: RunContext, data: dict[str, Any]) -> str:
        """Start the timer HassStartTimer asks for; its plain answer."""
        seconds = _duration(slots)
        if seconds <= 0:
            raise TimerError("timer_not_found")
        name = str(slots["name"]).strip() if slots.get("name") else None
        area = context.data.get("area") or slots.get("area")
        timer = self.start_timer(seconds, context.site_id, name, area)
        data["timer_id"] = timer.id
        return f"Timer set for {_spoken_duration(seconds)}"

    def _cancel_all(
        self, slots: dict[str, Any], data: dict[str, Any], extra: dict[str, Any]
    ) -> str:
        """Cancel every timer (in the area, if one is named); the plain answer."""
        with self._lock:
            chosen = [t for t in self.timers.values() if _in_area(t, slots.get("area"))]
            for timer in chosen:
                self._remove(timer, "cancelled")
        extra["canceled"] = len(chosen)
        data["timer_ids"] = [t.id for t in chosen]
        return f"Canceled {len(chosen)} timers." if chosen else "No timers were canceled."

    def _pause(self, timer: Timer) -> None:
        """Pause a running timer (a paused one stays as it is)."""
        if timer.is_active:
            timer.left_at_pause = timer.seconds_left()
            if timer.handle is not None:
                timer.handle.cancel()
            self._emit(timer, "paused")

    def _unpause(self, timer: Timer) -> None:
        """Resume a paused timer (a running one stays as it is)."""
        if not timer.is_active:
            left = timer.left_at_pause or 0.0
            timer.left_at_pause = None
            self._arm(timer, left)
            self._emit(timer, "resumed")

    def _add_time(self, timer: Timer, intent_name: str, slots: dict[str, Any]) -> str:
        """Add (HassIncreaseTimer) or remove time from a timer; the plain answer."""
        change = _duration(slots) * (1 if intent_name == "HassIncreaseTimer" else -1)
        left = max(0.0, timer.seconds_left() + change)
        if timer.is_active:
            self._arm(timer, left)
        else:
            timer.left_at_pause = left
        self._emit(timer, "updated")
        verb = "added to" if change > 0 else "removed from"
        return f"{_spoken_duration(abs(change))} {verb} timer"

    def _find(self, slots: dict[str, Any], context: RunContext, many: bool) -> list[Timer]:
        """Timers the slots describe (name, area, start duration), as Home Assistant does."""
        found = _described(list(self.timers.values()), slots)
        if many:
            return found
        if not found:
            raise TimerError("timer_not_found")
        if len(found) > 1:
            here = [t for t in found if t.site_id == context.site_id]
            if len(here) != 1:
                raise TimerError("multiple_timers_matched")
            found = here
        return found

    def _arm(self, timer: Timer, seconds: float) -> None:
        if timer.handle is not None:
            timer.handle.cancel()
        timer.deadline = time.monotonic() + seconds
        timer.handle = threading.Timer(seconds, self._finish, args=(timer.id,))
        timer.handle.daemon = True
        timer.handle.name = f"voiced-timer-{timer.id}"
        timer.handle.start()

    def _finish(self, timer_id: int) -> None:
        with self._lock:
            timer = self.timers.pop(timer_id, None)
        if timer is None:  # cancelled as it fired
            return
        self._emit(timer, "finished")
        name = f"{timer.name} " if timer.name else ""
        text = self.options.announcement.format(name=name)
        log.info("timer %d finished at %s: %s", timer.id, timer.site_id, text)
        if self.app is not None:
            self.app.call_threadsafe(self.app.say(text, timer.site_id))

    def _remove(self, timer: Timer, action: str) -> None:
        if timer.handle is not None:
            timer.handle.cancel()
        self.timers.pop(timer.id, None)
        self._emit(timer, action)

    def _emit(self, timer: Timer, action: str) -> None:
        if self.app is None:
            return
        data = {
            "action": action,
            "timer_id": timer.id,
            "name": timer.name,
            "area": timer.area,
            "seconds": timer.seconds,
            "seconds_left": round(timer.seconds_left(), 1),
        }
        self.app.emit(Event(EventType.TIMER, None, timer.site_id, data))

    # -- answers ----------------------------------------------------------------------------

    def _say(self, intent: Intent, fallback: str, responses: dict[str, Any], **extra: Any) -> str:
        from voiced_plugins.intent_hassil.responses import response_for

        text = response_for(intent, responses, **extra)
        return text if text else fallback


class ResponsesHandler:
    """Says Home Assistant's response for an intent nobody acted on (``acted`` is False)."""

    name = "responses"

    def __init__(self, options: ResponsesOptions, app: Any = None) -> None:
        self.options = options
        self.app = app
        self.responses: dict[str, dict[str, str]] = {}
        self.errors: dict[str, str] = {}

    def load(self) -> None:
        self.responses, self.errors = _language_responses(self.app, _default(self))

    def fixed_answers(self) -> list[str]:
        """What this handler may say that never changes (the daemon caches their audio)."""
        others = {k: v for k, v in self.responses.items() if k not in HANDLED}
        return fixed_answers(others, _home(self.app))

    def anticipated_answers(self) -> list[str]:
        """What this handler may say soon, as the home is now (the daemon synthesizes them
        ahead of need): each state answer for each entity ("Yes" / "No, unlocked" for "is
        the front door locked", "Outside temperature is 12 °C"), and "Temperature set to …"
        for the common temperatures, and "not aware of any climate in the Bedroom area" where
        a place has none to read."""
        others = {k: v for k, v in self.responses.items() if k not in HANDLED}
        answers = state_answers(others, _home(self.app))
        template = (others.get("HassClimateSetTemperature") or {}).get("default")
        if template:
            for degrees in COMMON_TEMPERATURES:
                answers.append(_render_quietly(template, {"temperature": str(degrees)}))
        answers += self._none_of_kind_answers()
        return [text for text in dict.fromkeys(answers) if text]

    def _none_of_kind_answers(self) -> list[str]:
        home = _home(self.app)
        if home is None:
            return []
        answers = []
        for name, domain in READS_ONE.items():
            areas = [{"area": a.name} for a in home.areas] if name in ASKED_BY_PLACE else []
            for slots in [{}, *areas]:
                if not home.match({**slots, "domain": domain}):
                    answer = self._none_of_kind(slots, domain, self.errors, _default(self))
                    answers.append(answer.speech)
        return answers

    def close(self) -> None:
        pass

    @hookimpl(trylast=True)
    def voiced_handle(self, intent: Intent, context: RunContext) -> Response | None:
        from voiced_plugins.intent_hassil.responses import response_for

        language = self.options.language or context.language
        responses, errors = _language_responses(self.app, language)
        home = _home(self.app)
        matched, unmatched = [], []
        if home is not None:
            entities = [home.entity(i) for i in intent.data.get("entities") or []]
            entities = [e for e in entities if e is not None]
            wanted = intent.slots.get("state")
            for entity in entities:
                if wanted is None or entity.state == str(wanted):
                    matched.append(entity)
                else:
                    unmatched.append(entity)
            if intent.slots.get("name") not in (None, "all") and not entities:
                return self._unknown(intent, errors)
            if intent.name in READS_ONE and not entities:
                return self._none_of_kind(intent.slots, READS_ONE[intent.name], errors, language)
        speech = response_for(intent, responses, matched, unmatched)
        if speech is None:
            return None
        return Response(speech, self.name, data={"acted": False})

    def _unknown(self, intent: Intent, errors: dict[str, str]) -> Response:
        """Home Assistant's "not aware of any device called ..." (in the area/floor named)."""
        slots = intent.slots
        key = _in_place("no_entity", slots)
        values = {"entity": slots["name"], "area": slots.get("area"), "floor": slots.get("floor")}
        speech = _plain_template(errors.get(key, ""), **values)
        speech = speech or f"Sorry, I am not aware of any device called {slots['name']}"
        return Response(speech, self.name, data={"acted": False, "error": key})

    def _none_of_kind(
        self, slots: dict[str, Any], domain: str, errors: dict[str, str], language: str
    ) -> Response:
        """Home Assistant's "not aware of any climate in the Bedroom area": a question about
        a kind of device the home (or the place named) has none of (the kind in words of
        ``language`` where its template says the domain as such)."""
        from voiced_plugins.intent_hassil.responses import domain_word

        key = _in_place("no_domain", slots)
        kind = domain_word(domain, language)
        values = {"domain": kind, "area": slots.get("area"), "floor": slots.get("floor")}
        speech = _plain_template(errors.get(key, ""), **values)
        speech = speech or f"Sorry, I am not aware of any {domain.replace('_', ' ')}"
        return Response(speech, self.name, data={"acted": False, "error": key})


# -- helpers --------------------------------------------------------------------------------

# Questions answered from the state of the one entity they find (Home Assistant's templates
# read ``state``): with none, the answer is that there is none, not a broken template.
READS_ONE = {"HassClimateGetTemperature": "climate", "HassGetWeather": "weather"}
ASKED_BY_PLACE = frozenset({"HassClimateGetTemperature"})  # "… in the bedroom"; weather: no


def _in_place(error: str, slots: dict[str, Any]) -> str:
    """The error's key for the place named: ``no_entity_in_area``, ``…_in_floor``, or itself."""
    place = "area" if slots.get("area") else "floor" if slots.get("floor") else None
    return f"{error}_in_{place}" if place else error


_PLAIN_ERRORS = {
    "timer_not_found": "Sorry, I couldn't find that timer",
    "multiple_timers_matched": "Sorry, I am unable to target multiple timers",
    "too_many_timers": "Sorry, there are too many timers running",
}


def _hassil(app: Any) -> Any:
    stage = getattr(app, "stage", None)
    if stage is None:
        return None
    try:
        return stage("intent", "hassil")
    except Exception:  # hassil not configured
        return None


def _home(app: Any) -> Any:
    return getattr(_hassil(app), "home", None)


def _default(handler: Any) -> str:
    """A handler's language before any run: its option, else the config's language."""
    settings = getattr(handler.app, "settings", None)
    return handler.options.language or getattr(settings, "language", None) or "en"


def _language_responses(app: Any, language: str) -> tuple[dict[str, Any], dict[str, str]]:
    """Response templates of a language: the hassil stage's grammar of it (custom ones
    included), else the package's."""
    hassil = _hassil(app)
    for_language = getattr(hassil, "for_language", None)
    grammar = for_language(language) if callable(for_language) else hassil
    same = not callable(for_language) or getattr(grammar, "language", "") == _package_tag(language)
    if grammar is not None and getattr(grammar, "responses", None) and same:
        return grammar.responses, getattr(grammar, "errors", {})
    return _package_responses(_package_tag(language))


@functools.lru_cache(maxsize=16)
def _package_tag(language: str) -> str:
    import home_assistant_intents

    return intents_language(language, home_assistant_intents.get_languages()) or "en"


@functools.lru_cache(maxsize=16)
def _package_responses(tag: str) -> tuple[dict[str, Any], dict[str, str]]:
    import home_assistant_intents

    data = home_assistant_intents.get_intents(tag) or {}
    responses = data.get("responses") or {}
    return responses.get("intents") or {}, responses.get("errors") or {}


def _described(timers: list[Timer], slots: dict[str, Any]) -> list[Timer]:
    """The timers that the name, area and start duration slots (those given) describe."""
    found = timers
    if slots.get("name"):
        wanted = str(slots["name"]).strip().casefold()
        found = [t for t in found if (t.name or "").casefold() == wanted]
    if slots.get("area"):
        found = [t for t in found if _in_area(t, slots["area"])]
    start = tuple(int(_number(slots.get(k, 0))) for k in ("start_hours", "start_minutes",
                                                           "start_seconds"))  # fmt: skip
    if any(start):
        found = [t for t in found if t.start == start]
    return found


_STATE_DOMAIN = re.compile(r"\bstate\.domain\b")
_STATE = re.compile(r"\bstate\b")


def fixed_answers(responses: dict[str, dict[str, str]], home: Any = None) -> list[str]:
    """The answers of ``responses`` that read no slot, query or entity state: "Turned on the
    lights", "Timer cancelled"; a template that reads only the entity's domain ("Turned on
    the fan") gives one answer per domain of ``home``. Answers with digits (times) are left
    out. In template order, without repeats."""
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    env = ImmutableSandboxedEnvironment()
    by_domain: dict[str, Any] = {}
    for entity in getattr(home, "entities", None) or []:
        by_domain.setdefault(entity.domain, entity)
    answers: dict[str, None] = {}
    for templates in responses.values():
        for template in templates.values():
            for text in _fixed_template_answers(env, template, by_domain):
                answers.setdefault(text, None)
    return list(answers)


def _fixed_template_answers(env: Any, template: str, by_domain: dict[str, Any]) -> list[str]:
    """The answers one response template gives when it reads no slot, query or entity
    state (one per domain of ``by_domain`` when it reads only the domain); [] otherwise."""
    from jinja2 import TemplateError, meta
    from voiced_plugins.intent_hassil.responses import render

    try:
        reads = meta.find_undeclared_variables(env.parse(template))
    except TemplateError:
        return []
    if reads - {"state"}:
        return []  # slots, query, state_attr: the answer depends on what was asked
    if "state" in reads:
        if len(_STATE.findall(template)) != len(_STATE_DOMAIN.findall(template)):
            return []  # reads the state itself ("22 degrees")
        entities: list[list[Any]] = [[e] for e in by_domain.values()]
    else:
        entities = [[]]
    texts = []
    for matched in entities:
        try:
            text = render(template, {}, matched)
        except (TemplateError, TypeError, ValueError, KeyError, AttributeError):
            continue
        if text and "None" not in text and not any(ch.isdigit() for ch in text):
            texts.append(text)
    return texts


COMMON_TIMERS = (("minutes", (1, 2, 3, 5, 10, 15, 20, 30)), ("seconds", (30,)), ("hours", (1,)))
ENGLISH_NUMBERS = {1: "one", 2: "two", 3: "three", 5: "five", 10: "ten", 15: "fifteen",
                   20: "twenty", 30: "thirty"}  # fmt: skip
COMMON_TEMPERATURES = range(18, 25)


# Questions about an entity's state: the response keys that answer about one entity, and the
# domains asked about (None: any)
STATE_QUESTIONS: dict[str, tuple[tuple[str, ...], frozenset[str] | None]] = {
    "HassGetState": (("default", "one", "one_yesno"), None),
    "HassClimateGetTemperature": (("default",), frozenset({"climate"})),
}


def state_answers(responses: dict[str, dict[str, str]], home: Any = None) -> list[str]:
    """The answers to questions about one entity's state (``STATE_QUESTIONS``), rendered for
    each entity of ``home`` that has a state, as it is now, matched and not: "Front door is
    locked", "Yes", "No, unlocked", "20 degrees"."""
    answers: dict[str, None] = {}
    entities = [e for e in getattr(home, "entities", None) or [] if e.state]
    for name, (keys, domains) in STATE_QUESTIONS.items():
        templates = responses.get(name) or {}
        for key in keys:
            template = templates.get(key)
            if not template:
                continue
            for entity in entities:
                if domains is not None and entity.domain not in domains:
                    continue
                slots = {"name": entity.name, "domain": entity.domain}
                for matched, unmatched in (([entity], []), ([], [entity])):
                    text = _render_quietly(template, slots, matched, unmatched)
                    if text and "None" not in text:
                        answers.setdefault(text, None)
    return list(answers)


def _render_quietly(template: str, slots: dict[str, Any], *entities: Any) -> str:
    """A template rendered, or '' where it needs what is not there (another slot)."""
    from jinja2 import TemplateError
    from voiced_plugins.intent_hassil.responses import render

    try:
        return render(template, slots, *entities)
    except (TemplateError, TypeError, ValueError, KeyError, AttributeError, IndexError):
        return ""


def _plain_template(text: str, **values: Any) -> str:
    """Render an error template (they read plain names such as ``{{ entity }}``)."""
    from jinja2 import TemplateError
    from jinja2.sandbox import ImmutableSandboxedEnvironment
    from voiced_plugins.intent_hassil.responses import without_spaces_in_cjk

    try:
        rendered = ImmutableSandboxedEnvironment().from_string(text).render(**values)
    except TemplateError:
        return ""
    return without_spaces_in_cjk(" ".join(rendered.split()))


def _number(value: Any) -> float:
    if value in (None, ""):
        return 0.0
    if isinstance(value, str) and value.strip().casefold() in ("half", "1/2"):
        return 0.5
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0


def _duration(slots: dict[str, Any]) -> float:
    return (
        _number(slots.get("hours")) * 3600
        + _number(slots.get("minutes")) * 60
        + _number(slots.get("seconds"))
    )


def _split(seconds: float) -> tuple[int, int, int]:
    hours, rest = divmod(round(seconds), 3600)
    minutes, secs = divmod(rest, 60)
    return hours, minutes, secs


def _spoken_duration(seconds: float) -> str:
    parts = []
    for amount, unit in zip(_split(seconds), ("hour", "minute", "second"), strict=True):
        if amount:
            parts.append(f"{amount} {unit}{'' if amount == 1 else 's'}")
    if not parts:
        return "0 seconds"
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def _plain_status(timers: list[Timer]) -> str:
    if not timers:
        return "No timers."
    soonest = min(timers, key=lambda t: t.seconds_left())
    return f"{len(timers)} timers. {_spoken_duration(soonest.seconds_left())} left."


def _in_area(timer: Timer, area: Any) -> bool:
    return not area or (timer.area or "").casefold() == str(area).casefold()


@hookimpl
def voiced_register_stages(register: Any) -> None:
    register(
        "handler", "builtin", BuiltinHandler, options=BuiltinOptions,
        description="time, date, timers (announced when done), never mind",
    )  # fmt: skip
    register(
        "handler", "responses", ResponsesHandler, options=ResponsesOptions,
        description="last resort: say Home Assistant's response for an intent nobody acted on",
    )  # fmt: skip
