"""Every hook, exercised by registering a throwaway plugin class and unregistering it after."""

from __future__ import annotations

import pytest

from voiced.context import RunContext
from voiced.events import Event
from voiced.hookspecs import hookimpl
from voiced.intents import Intent, Response, Transcript
from voiced.plugins import load_plugins, new_plugin_manager


@pytest.fixture
def pm():
    return new_plugin_manager()


def test_hook_voiced_register_stages_offers_a_stage_with_its_options_model():
    from pydantic import BaseModel

    class Options(BaseModel):
        level: int = 3

    class Offers:
        @hookimpl
        def voiced_register_stages(self, register):
            register(
                "sink", "tape", dict, options=Options, description="a tape deck", shorthand="level"
            )

    host = load_plugins(extra=[("tape-deck", Offers())])
    spec = host.stage_spec("sink", "tape")
    assert spec is not None
    assert (spec.plugin, spec.options, spec.shorthand) == ("tape-deck", Options, "level")
    assert "sink:tape" in next(p for p in host.plugins if p.name == "tape-deck").stages


def test_hook_voiced_recognize_asks_templates_first_and_the_fallback_last(pm):
    calls = []

    class Fallback:
        @hookimpl(trylast=True)
        def voiced_recognize(self, transcript, context):
            calls.append("fallback")
            return Intent("FromFallback")

    class Templates:
        @hookimpl(tryfirst=True)
        def voiced_recognize(self, transcript, context):
            calls.append("templates")
            return Intent("HassTurnOn") if "on" in transcript.text else None

    pm.register(Fallback(), name="fallback")
    pm.register(Templates(), name="templates")
    ctx = RunContext()
    assert (
        pm.hook.voiced_recognize(transcript=Transcript("turn on"), context=ctx).name == "HassTurnOn"
    )
    assert calls == ["templates"]
    assert (
        pm.hook.voiced_recognize(transcript=Transcript("sing"), context=ctx).name == "FromFallback"
    )
    assert calls == ["templates", "templates", "fallback"]


def test_hook_voiced_handle_returns_the_first_answer(pm):
    class Declines:
        @hookimpl
        def voiced_handle(self, intent, context):
            return None

    class Answers:
        @hookimpl
        def voiced_handle(self, intent, context):
            return Response(speech=f"handled {intent.name}", handler="answers")

    pm.register(Declines(), name="declines")
    pm.register(Answers(), name="answers")
    response = pm.hook.voiced_handle(intent=Intent("HassNevermind"), context=RunContext())
    assert response.speech == "handled HassNevermind"
    pm.unregister(name="answers")
    assert pm.hook.voiced_handle(intent=Intent("HassNevermind"), context=RunContext()) is None


def test_hook_voiced_event_reaches_every_observer(pm):
    seen: list[tuple[str, str]] = []

    class Observer:
        def __init__(self, name):
            self.name = name

        @hookimpl
        def voiced_event(self, event):
            seen.append((self.name, event.type))

    pm.register(Observer("a"), name="a")
    pm.register(Observer("b"), name="b")
    pm.hook.voiced_event(event=Event("transcript", "run1", "kitchen", {"text": "hi"}))
    assert sorted(seen) == [("a", "transcript"), ("b", "transcript")]


def test_hook_voiced_register_commands_adds_a_cli_subcommand(capsys):
    from voiced import cli

    class Command:
        @hookimpl
        def voiced_register_commands(self, add_command):
            add_command(
                "hello",
                "say hello",
                lambda p: p.add_argument("name"),
                lambda args: print(f"hello {args.name}") or 0,
            )

    host = load_plugins(extra=[("hello", Command())])
    commands = []
    host.pm.hook.voiced_register_commands(add_command=lambda *a: commands.append(a))
    parser = cli.build_parser(commands)
    args = parser.parse_args(["hello", "kitchen"])
    assert args.func(args) == 0
    assert capsys.readouterr().out.strip() == "hello kitchen"


def test_hook_voiced_register_commands_supports_nested_names():
    from voiced import cli

    commands = [("models convert", "convert", lambda p: p.add_argument("src"), lambda args: 7)]
    args = cli.build_parser(commands).parse_args(["models", "convert", "x"])
    assert (args.src, args.func(args)) == ("x", 7)


def test_hook_voiced_doctor_checks_results_are_collected(pm):
    class Checks:
        @hookimpl
        def voiced_doctor_checks(self, config):
            return [{"name": "kettle", "ok": True}]

    pm.register(Checks(), name="checks")
    assert pm.hook.voiced_doctor_checks(config=None) == [[{"name": "kettle", "ok": True}]]


@pytest.mark.parametrize("hook", ["voiced_event", "voiced_register_stages", "voiced_doctor_checks"])
def test_a_wrapper_of_a_hook_called_one_at_a_time_is_rejected_at_start_up(hook):
    from voiced.plugins import PluginError

    arguments = {"voiced_event": "event", "voiced_register_stages": "register"}
    name = arguments.get(hook, "config")
    namespace = {"__name__": hook}
    exec(f"def {hook}(self, {name}):\n    return (yield)\n", namespace)
    Wrapper = type("Wrapper", (), {hook: hookimpl(wrapper=True)(namespace[hook])})
    with pytest.raises(PluginError, match=rf"'wrapping': {hook} cannot be a hook wrapper"):
        load_plugins(extra=[("wrapping", Wrapper())])


def test_a_wrapper_of_recognize_sees_the_answer_through_pluggy(pm):
    seen = []

    class Templates:
        @hookimpl
        def voiced_recognize(self, transcript, context):
            return Intent("HassTurnOn")

    class Audit:
        @hookimpl(wrapper=True)
        def voiced_recognize(self, transcript, context):
            intent = yield
            seen.append(intent.name)
            return intent

    pm.register(Templates(), name="templates")
    pm.register(Audit(), name="audit")
    intent = pm.hook.voiced_recognize(transcript=Transcript("turn on"), context=RunContext())
    assert intent.name == "HassTurnOn" and seen == ["HassTurnOn"]
