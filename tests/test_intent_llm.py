"""The LLM fallback against a small OpenAI-compatible server on 127.0.0.1.

The server is a test peer speaking the chat-completions protocol with scripted answers; the
thing under test is the client: what it sends, and what it makes of each answer.
"""

from __future__ import annotations

import base64
import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr
from voiced_plugins.intent_hassil import HassilIntent, HassilOptions
from voiced_plugins.intent_llm import LlmIntent, LlmOptions

from voiced.config import masked
from voiced.context import RunContext
from voiced.intents import Transcript
from voiced.plugins import new_plugin_manager

HOME = Path(__file__).parents[1] / "config" / "home.yaml"


class ChatServer:
    """Answers POST /v1/chat/completions with the next scripted reply; records requests."""

    def __init__(self) -> None:
        self.replies: list[tuple[int, Any, float]] = []
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                server.requests.append(json.loads(body))
                server.headers.append(dict(self.headers))
                status, reply, delay = server.replies.pop(0) if server.replies else (500, "", 0)
                time.sleep(delay)
                data = reply if isinstance(reply, bytes) else json.dumps(reply).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def tool_call(self, intent: str, slots: dict[str, Any], delay: float = 0.0) -> None:
        arguments = json.dumps({"intent": intent, "slots": slots})
        message = {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "recognize_intent", "arguments": arguments}}]}  # fmt: skip
        self.replies.append((200, {"choices": [{"message": message}]}, delay))

    def content(self, text: str) -> None:
        message = {"role": "assistant", "content": text}
        self.replies.append((200, {"choices": [{"message": message}]}, 0.0))


@pytest.fixture
def server() -> Iterator[ChatServer]:
    chat = ChatServer()
    chat.thread.start()
    yield chat
    chat.httpd.shutdown()
    chat.httpd.server_close()


@pytest.fixture(scope="module")
def hassil() -> HassilIntent:
    stage = HassilIntent(HassilOptions(home=str(HOME), sentences=[]))
    stage.load()
    return stage


class App:
    """The collaborator the LLM stage asks for the hassil stage (the daemon's ``stage``)."""

    def __init__(self, hassil: HassilIntent) -> None:
        self.hassil = hassil

    def stage(self, kind: str, name: str | None = None) -> Any:
        if (kind, name) != ("intent", "hassil"):
            raise KeyError(name)
        return self.hassil


def llm_stage(url: str, hassil: HassilIntent | None = None, **options: Any) -> LlmIntent:
    options = {"timeout": 2.0, **options}
    stage = LlmIntent(LlmOptions(url=url, **options), App(hassil) if hassil else None)
    stage.load()
    return stage


def ask(stage: LlmIntent, text: str) -> tuple[Any, RunContext]:
    context = RunContext()
    return stage.voiced_recognize(Transcript(text), context), context


def test_a_tool_call_becomes_an_intent_with_home_names(server, hassil):
    server.tool_call("HassTurnOn", {"name": "reading lamp"})
    intent, context = ask(llm_stage(server.url, hassil), "make it bright where I read")
    assert intent is not None
    assert (intent.name, intent.slots) == ("HassTurnOn", {"name": "Reading Lamp"})
    assert intent.recognizer == "llm"
    assert intent.data["entities"] == ["light.reading_lamp"]
    assert "intent_errors" not in context.data


def test_the_request_offers_only_known_intents_and_names_with_temperature_zero(server, hassil):
    server.tool_call("HassGetCurrentTime", {})
    stage = llm_stage(server.url, hassil, model="tiny", api_key=SecretStr("s3cret"))
    ask(stage, "what's the hour")
    request = server.requests[0]
    assert request["model"] == "tiny"
    assert request["temperature"] == 0
    parameters = request["tools"][0]["function"]["parameters"]["properties"]
    assert "HassTurnOn" in parameters["intent"]["enum"]
    assert "none" in parameters["intent"]["enum"]
    assert "Kitchen Light" in parameters["slots"]["properties"]["name"]["enum"]
    assert "Living Room" in parameters["slots"]["properties"]["area"]["enum"]
    assert request["messages"][-1] == {"role": "user", "content": "what's the hour"}
    assert server.headers[0]["Authorization"] == "Bearer s3cret"
    assert "s3cret" not in repr(stage.options)


def test_json_mode_parses_a_fenced_json_answer(server, hassil):
    server.content('```json\n{"intent": "HassStartTimer", "slots": {"minutes": "5"}}\n```')
    intent, _ = ask(llm_stage(server.url, hassil, mode="json"), "five minute timer thing")
    assert (intent.name, intent.slots) == ("HassStartTimer", {"minutes": 5})
    assert server.requests[0]["response_format"] == {"type": "json_object"}
    assert "tools" not in server.requests[0]


def test_a_server_without_tools_is_asked_again_for_json(server, hassil):
    server.replies.append((400, {"error": {"message": "tools are not supported"}}, 0.0))
    server.content('{"intent": "HassGetCurrentDate", "slots": {}}')
    server.content('{"intent": "HassGetCurrentTime", "slots": {}}')
    stage = llm_stage(server.url, hassil)
    assert ask(stage, "which day is it")[0].name == "HassGetCurrentDate"
    assert ask(stage, "what's the hour")[0].name == "HassGetCurrentTime"
    assert ["tools" in r for r in server.requests] == [True, False, False]


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("this is not json", "invalid JSON"),
        ('{"intent": "HassSelfDestruct", "slots": {}}', "unknown intent 'HassSelfDestruct'"),
        ('{"intent": "HassTurnOn", "slots": {"name": "Garage Door"}}', "unknown name"),
        ('{"intent": "HassTurnOn", "slots": {"volume": 3}}', "not a slot of HassTurnOn"),
        ("[1, 2]", "not an object"),
    ],
)
def test_unusable_answers_give_none_and_a_reason(server, hassil, reply, reason):
    server.content(reply)
    intent, context = ask(llm_stage(server.url, hassil, mode="json"), "do the thing")
    assert intent is None
    assert context.data["intent_errors"][0]["recognizer"] == "llm"
    assert reason in context.data["intent_errors"][0]["reason"]


def test_none_means_no_intent_without_an_error(server, hassil):
    server.tool_call("none", {})
    intent, context = ask(llm_stage(server.url, hassil), "tell me a joke")
    assert intent is None
    assert "intent_errors" not in context.data


def test_a_slow_server_is_given_up_on_at_the_timeout(server, hassil):
    server.tool_call("HassTurnOn", {"name": "Kitchen Light"}, delay=3.0)
    stage = llm_stage(server.url, hassil, timeout=0.5)
    intent, context = ask(stage, "kitchen on")
    # Had it waited, the (valid) answer would have become an intent.
    assert intent is None
    assert "within 0.5s" in context.data["intent_errors"][0]["reason"]


def test_an_unreachable_server_gives_none_and_says_so():
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    stage = llm_stage(f"http://127.0.0.1:{port}/v1")
    intent, context = ask(stage, "turn on the kitchen light")
    assert intent is None
    assert "cannot reach" in context.data["intent_errors"][0]["reason"]


def test_without_a_url_the_stage_stays_idle_and_says_why(hassil):
    stage = LlmIntent(LlmOptions(), App(hassil))
    stage.load()
    intent, context = ask(stage, "turn on the kitchen light")
    assert intent is None
    assert "not configured" in context.data["intent_errors"][0]["reason"]


def test_an_http_error_is_reported_with_its_status(server, hassil):
    server.replies.append((503, {"error": "model loading"}, 0.0))
    intent, context = ask(llm_stage(server.url, hassil), "turn on the kitchen light")
    assert intent is None
    assert "HTTP 503" in context.data["intent_errors"][0]["reason"]


def test_without_a_hassil_stage_it_reads_its_own_home_file(server):
    server.tool_call("HassTurnOff", {"area": "kitchen"})
    stage = llm_stage(server.url, home=str(HOME))
    intent, _ = ask(stage, "kitchen dark please")
    assert intent.slots == {"area": "Kitchen"}
    assert "light.kitchen" in intent.data["entities"]


def test_the_llm_is_asked_only_when_the_templates_miss(server, hassil):
    pm = new_plugin_manager()
    pm.register(hassil, name="hassil")
    pm.register(llm_stage(server.url, hassil), name="llm")
    server.tool_call("HassTurnOn", {"name": "Coffee Maker"})

    template = pm.hook.voiced_recognize(
        transcript=Transcript("turn on the kitchen light"), context=RunContext()
    )
    assert template.recognizer == "hassil"
    assert server.requests == []

    fallback = pm.hook.voiced_recognize(
        transcript=Transcript("I need caffeine now"), context=RunContext()
    )
    assert fallback.recognizer == "llm"
    assert fallback.slots == {"name": "Coffee Maker"}
    assert len(server.requests) == 1


def test_credentials_in_the_url_log_in_by_header_and_never_reach_a_message(server, hassil):
    url = server.url.replace("http://", "http://llm-user:p%40ss-w0rd@")
    server.replies.append((503, {"error": "model loading"}, 0.0))
    _, context = ask(llm_stage(url, hassil), "turn on the kitchen light")
    login = base64.b64encode(b"llm-user:p@ss-w0rd").decode()
    assert server.headers[0]["Authorization"] == f"Basic {login}"
    reason = context.data["intent_errors"][0]["reason"]
    assert "HTTP 503" in reason
    assert "w0rd" not in reason and "llm-user" not in reason


def test_the_effective_config_masks_passwords_inside_urls():
    shown = masked(
        {"stages": {"intent": {"llm": {"url": "https://me:hunter2@llm.lan/v1"}}},
         "mqtt": ["mqtt://voiced:s3cret@broker:1883"]}
    )  # fmt: skip
    assert shown["stages"]["intent"]["llm"]["url"] == "https://me:***@llm.lan/v1"
    assert shown["mqtt"] == ["mqtt://voiced:***@broker:1883"]


def test_the_model_is_told_who_is_speaking_when_voiced_knows(server, hassil):
    server.tool_call("HassGetCurrentTime", {})
    server.tool_call("HassGetCurrentTime", {})
    stage = llm_stage(server.url, hassil)
    context = RunContext(speaker="alice")
    stage.voiced_recognize(Transcript("what's the hour"), context)
    ask(stage, "what's the hour")  # no speaker stage: nothing said about the speaker
    told, untold = (r["messages"][0]["content"] for r in server.requests)
    assert "The person speaking: Alice." in told
    assert "person speaking" not in untold
