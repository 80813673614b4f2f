"""Built-in handlers: time, date, timers that fire and are announced, HA's spoken responses."""

from __future__ import annotations

import asyncio
import datetime as dt
from typing import Any

import pytest
from voiced_plugins.handle_builtin import (
    BuiltinHandler,
    BuiltinOptions,
    ResponsesHandler,
    ResponsesOptions,
)
from voiced_plugins.intent_hassil import HassilIntent

from voiced.context import RunContext
from voiced.events import Event, EventType
from voiced.hookspecs import hookimpl
from voiced.intents import Intent, Response
from voiced.plugins import new_plugin_manager


class App:
    """A minimal daemon (the Assistant protocol): the handlers' collaborator, not under test."""

    def __init__(self, loop: asyncio.AbstractEventLoop, hassil: HassilIntent) -> None:
        self.loop = loop
        self.hassil = hassil
        self.settings = None
        self.events: list[Event] = []
        self.said: list[tuple[str, str | None]] = []
        self.spoken = asyncio.Event()

    def emit(self, event: Event) -> None:
        self.events.append(event)

    async def say(self, text: str, site_id: str | None = None) -> None:
        self.said.append((text, site_id))
        self.spoken.set()

    async def listen(self, site_id: str | None = None) -> None:
        pass

    def set_muted(self, muted: bool, site_id: str | None = None) -> None:
        pass

    def cancel(self, site_id: str | None = None) -> None:
        pass

    def stage(self, kind: str, name: str | None = None) -> Any:
        if (kind, name) == ("intent", "hassil"):
            return self.hassil
        raise KeyError(f"no {kind} stage {name}")

    def call_threadsafe(self, coro: Any) -> None:
        asyncio.run_coroutine_threadsafe(coro, self.loop)

    def timer_actions(self) -> list[str]:
        return [e.data["action"] for e in self.events if e.type == EventType.TIMER]


@pytest.fixture
async def app(hassil) -> App:
    return App(asyncio.get_running_loop(), hassil)


@pytest.fixture
async def builtin(app):
    handler = BuiltinHandler(BuiltinOptions(), app)
    handler.load()
    yield handler
    handler.close()


@pytest.fixture
async def responses(app) -> ResponsesHandler:
    handler = ResponsesHandler(ResponsesOptions(), app)
    handler.load()
    return handler


async def handle(handler: Any, hassil: HassilIntent, text: str, site: str = "kitchen") -> Response:
    """Recognize and handle in a worker thread, as the pipeline does."""
    intent = hassil.recognize(text)
    assert intent is not None, text
    return await asyncio.to_thread(handler.voiced_handle, intent, RunContext(site_id=site))


async def test_current_time_is_said_with_home_assistants_template(builtin, hassil):
    before = dt.datetime.now()
    response = await handle(builtin, hassil, "what time is it")
    after = dt.datetime.now()
    spoken = {t.strftime("%-I:%M %p") for t in (before, after)}
    assert response.speech in spoken
    assert response.handler == "builtin"


async def test_current_date_is_said_as_month_ordinal_year(builtin, hassil):
    response = await handle(builtin, hassil, "what is the date")
    today = dt.date.today()
    suffix = {1: "st", 2: "nd", 3: "rd", 21: "st", 22: "nd", 23: "rd", 31: "st"}.get(
        today.day, "th"
    )
    assert response.speech == f"{today:%B} {today.day}{suffix}, {today.year}"


async def test_a_timer_fires_an_event_and_is_announced_at_its_site(builtin, hassil, app):
    response = await handle(builtin, hassil, "set a timer for 1 second", site="kitchen")
    assert response.speech == "Timer set for 1 second"
    await asyncio.wait_for(app.spoken.wait(), timeout=10)
    assert app.said == [("Your timer is done.", "kitchen")]
    assert app.timer_actions() == ["started", "finished"]
    finished = next(e for e in app.events if e.data.get("action") == "finished")
    assert finished.site_id == "kitchen"
    assert builtin.timers == {}


async def test_a_named_timer_is_announced_by_name(builtin, hassil, app):
    await handle(builtin, hassil, "set a timer for 1 second named pizza")
    await asyncio.wait_for(app.spoken.wait(), timeout=10)
    assert app.said[0][0] == "Your pizza timer is done."


async def test_a_cancelled_timer_never_fires(builtin, hassil, app):
    await handle(builtin, hassil, "set a timer for 1 second")
    response = await handle(builtin, hassil, "cancel my timer")
    assert response.speech == "Timer cancelled"
    await asyncio.sleep(1.5)
    assert app.said == []
    assert app.timer_actions() == ["started", "cancelled"]


async def test_status_pause_resume_and_add_time(builtin, hassil, app):
    await handle(builtin, hassil, "set a timer for 10 minutes named pizza")
    await handle(builtin, hassil, "set a timer for 5 minutes")
    status = await handle(builtin, hassil, "timer status")
    assert status.speech == "2 running timers. 5 minutes left on 5 minute timer."
    assert (await handle(builtin, hassil, "pause the pizza timer")).speech == "Timer paused"
    paused = await handle(builtin, hassil, "how much time is left on the pizza timer")
    assert paused.speech == "Timer is paused. 10 minutes left."
    assert (await handle(builtin, hassil, "resume the pizza timer")).speech == "Timer resumed"
    added = await handle(builtin, hassil, "add 5 minutes to the pizza timer")
    assert added.speech == "5 minutes added to timer named pizza"
    pizza = next(t for t in builtin.timers.values() if t.name == "pizza")
    assert 14 * 60 < pizza.seconds_left() <= 15 * 60
    assert app.timer_actions() == ["started", "started", "paused", "resumed", "updated"]


async def test_an_ambiguous_cancel_asks_nothing_and_cancels_nothing(builtin, hassil):
    await handle(builtin, hassil, "set a timer for 10 minutes", site="a")
    await handle(builtin, hassil, "set a timer for 20 minutes", site="a")
    response = await handle(builtin, hassil, "cancel the timer", site="b")
    assert response.speech == "Sorry, I am unable to target multiple timers"
    assert response.data == {"acted": False, "error": "multiple_timers_matched"}
    assert len(builtin.timers) == 2
    everything = await handle(builtin, hassil, "cancel all timers")
    assert everything.speech == "Canceled 2 timers."
    assert builtin.timers == {}


async def test_cancelling_a_timer_that_does_not_exist_says_so(builtin, hassil):
    response = await handle(builtin, hassil, "cancel the pizza timer")
    assert response.speech == "Sorry, I couldn't find that timer"


async def test_never_mind_is_handled_silently(builtin, hassil):
    response = await handle(builtin, hassil, "never mind")
    assert (response.speech, response.handler) == ("", "builtin")


async def test_entity_intents_are_left_to_other_handlers(builtin, hassil):
    assert await handle(builtin, hassil, "turn on the kitchen light") is None


async def test_responses_speaks_home_assistants_answer_without_acting(responses, hassil):
    response = await handle(responses, hassil, "turn on the kitchen light")
    assert response.speech == "Turned on the light"
    assert response.data == {"acted": False}
    area = await handle(responses, hassil, "turn off the lights in the living room")
    assert area.speech == "Turned off the lights"


async def test_responses_answers_state_questions_from_the_home(responses, hassil):
    assert (await handle(responses, hassil, "is the front door locked")).speech == "Yes"
    unlocked = await handle(responses, hassil, "is the front door unlocked")
    assert unlocked.speech == "No, locked"
    temperature = await handle(responses, hassil, "what is the outside temperature")
    assert temperature.speech == "Outside temperature is 12 °C"


async def test_responses_says_it_does_not_know_an_entity_the_home_lacks(responses):
    intent = Intent("HassTurnOn", {"name": "Garage Door"}, "open the garage", recognizer="llm")
    response = await asyncio.to_thread(responses.voiced_handle, intent, RunContext())
    assert response.data["error"] == "no_entity"
    assert response.speech


async def test_responses_says_there_is_nothing_to_read_where_the_home_has_none(responses, hassil):
    # config/home.yaml: its only thermostat is in the hallway, and it has no weather entity
    bedroom = await handle(responses, hassil, "what is the temperature in the bedroom")
    assert bedroom.speech == "Sorry, I am not aware of any climate in the Bedroom area"
    assert bedroom.data == {"acted": False, "error": "no_domain_in_area"}
    weather = await handle(responses, hassil, "what is the weather like")
    assert weather.speech == "Sorry, I am not aware of any weather"
    assert weather.data["error"] == "no_domain"
    hallway = await handle(responses, hassil, "what is the temperature in the hallway")
    assert hallway.speech == "20 degrees"
    expected = responses.anticipated_answers()
    assert bedroom.speech in expected and weather.speech in expected
    assert "Sorry, I am not aware of any climate in the Hallway area" not in expected


async def test_handlers_run_in_order_builtin_then_others_then_responses(builtin, responses, hassil):
    class Lights:
        """Stands in for an action handler (like the MQTT one) registered in the same manager."""

        @hookimpl
        def voiced_handle(self, intent: Intent, context: RunContext) -> Response | None:
            if intent.name == "HassTurnOn":
                return Response("Done", "lights", data={"acted": True})
            return None

    pm = new_plugin_manager()
    pm.register(responses, name="responses")
    pm.register(builtin, name="builtin")
    pm.register(Lights(), name="lights")

    def run(text: str) -> Response:
        return pm.hook.voiced_handle(intent=hassil.recognize(text), context=RunContext())

    assert run("turn on the kitchen light").handler == "lights"
    assert run("what time is it").handler == "builtin"
    assert run("set the reading lamp brightness to 50%").handler == "responses"


async def test_fixed_answers_are_the_templates_that_read_nothing_said(responses, hassil):
    fixed = responses.fixed_answers()
    assert {"Turned on the lights", "Turned off the fans", "Brightness set"} <= set(fixed)
    # HassTurnOn's default reads only the domain: one answer per domain of the home
    assert {"Turned on the light", "Turned on the fan", "Turned on the media player"} <= set(fixed)
    # what the handler then really says for a command is one of them
    assert (await handle(responses, hassil, "turn on the kitchen light")).speech in fixed
    # nothing that depends on a slot, a state or a number
    assert not [a for a in fixed if "None" in a or any(ch.isdigit() for ch in a)]
    assert not [a for a in fixed if a.startswith(("Timer set for", "Yes,"))]
    assert len(fixed) == len(set(fixed))


async def test_each_handler_gives_the_fixed_answers_of_its_own_intents(builtin, responses):
    assert "Timer cancelled" in builtin.fixed_answers()
    assert "Sorry, I couldn't find that timer" in builtin.fixed_answers()  # its own errors too
    assert "Timer cancelled" not in responses.fixed_answers()
    assert "Turned on the lights" not in builtin.fixed_answers()
