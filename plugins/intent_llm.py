"""LLM fallback for intent recognition: any OpenAI-compatible chat endpoint.

The ``trylast`` implementation of ``voiced_recognize``: it is asked only when the templates
found nothing. The model must pick one of the known intents (tool/function calling, or a
JSON answer where the server has no tools) with names/areas from the home; anything else,
a timeout or an unreachable server gives None and a reason in ``context.data["intent_errors"]``.
Only the standard library is used (urllib), so the core stays light.
"""

from __future__ import annotations

import base64
import json
import logging
import socket
import threading
import urllib.error
import urllib.request
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from voiced.api.app import RunContext
from voiced.api.hooks import hookimpl
from voiced.api.intents import Intent, Transcript
from voiced.api.text import split_credentials

log = logging.getLogger(__name__)

TOOL_NAME = "recognize_intent"
NO_INTENT = "none"
ENTITY_SLOTS = {"name": "entities", "area": "areas", "floor": "floors"}
DEFAULT_INTENTS = (
    "HassTurnOn", "HassTurnOff", "HassToggle", "HassLightSet", "HassGetState",
    "HassSetPosition", "HassClimateGetTemperature", "HassClimateSetTemperature",
    "HassGetCurrentTime", "HassGetCurrentDate", "HassStartTimer", "HassCancelTimer",
    "HassCancelAllTimers", "HassTimerStatus", "HassMediaPause", "HassMediaUnpause",
    "HassMediaNext", "HassMediaPrevious", "HassSetVolume", "HassGetWeather", "HassNevermind",
)  # fmt: skip


class LlmOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    url: str | None = Field(
        None,
        description="OpenAI-compatible API root, e.g. http://127.0.0.1:11434/v1 (Ollama); "
        "unset: the stage stays idle",
    )
    model: str = "qwen2.5:3b"
    api_key: SecretStr | None = None
    timeout: float = Field(8.0, gt=0, description="seconds for the whole request, then give up")
    temperature: float = 0.0
    mode: Literal["auto", "tools", "json"] = Field(
        "auto", description="tools: function calling; json: JSON answer; auto: tools, else JSON"
    )
    home: str = Field("", description="home file when the hassil stage is not loaded (same format)")
    intents: list[str] = Field(
        default_factory=list, description="intent names offered (default: those hassil knows)"
    )
    max_names: int = Field(300, gt=0, description="at most this many entity names in a prompt")


class LlmError(Exception):
    """Why the model's answer could not be used (goes into the run's intent_errors)."""


class LlmIntent:
    """Asks a chat model which intent a sentence means, constrained to what the home knows."""

    name = "llm"

    def __init__(self, options: LlmOptions, app: Any = None) -> None:
        self.options = options
        self.app = app
        self.intent_slots: dict[str, list[str]] = {}
        self.names: dict[str, list[str]] = {"entities": [], "areas": [], "floors": []}
        self._home: Any = None
        self._tools_work: bool | None = None if options.mode == "auto" else options.mode == "tools"

    # -- life cycle -------------------------------------------------------------------------

    def load(self) -> None:
        """Learn the intents and names; no request is made (the server may come up later)."""
        hassil = self._hassil_stage()
        if hassil is not None:
            self.intent_slots = dict(hassil.intent_slots)
            home = hassil.home
        else:
            import home_assistant_intents
            from voiced_plugins.intent_hassil import intent_slots

            language = getattr(getattr(self.app, "settings", None), "language", "en") or "en"
            self.intent_slots = intent_slots(home_assistant_intents.get_intents(language) or {})
            home = self._own_home()
        self._choose_intents()
        if home is not None:
            self.names = self._names_in(home)
        self._home = home

    def _choose_intents(self) -> None:
        """Keep the configured intents (raising for one the recognizer does not know), else
        all known ones, else ``DEFAULT_INTENTS``."""
        if self.options.intents:
            unknown = sorted(set(self.options.intents) - set(self.intent_slots))
            if unknown and self.intent_slots:
                raise ValueError(
                    f"[stages.intent.llm] intents: unknown intent(s) {', '.join(unknown)}; "
                    f"known: {', '.join(self.intent_slots)}"
                )
            self.intent_slots = {k: self.intent_slots.get(k, []) for k in self.options.intents}
        elif not self.intent_slots:
            self.intent_slots = {name: [] for name in DEFAULT_INTENTS}

    def _names_in(self, home: Any) -> dict[str, list[str]]:
        """The entity (at most ``max_names``), area and floor names of a home, sorted."""
        return {
            "entities": sorted({n for e in home.entities for n in e.names})[
                : self.options.max_names
            ],
            "areas": sorted({n for a in home.areas for n in (a.name, *a.aliases)}),
            "floors": sorted({n for f in home.floors for n in (f.name, *f.aliases)}),
        }

    def close(self) -> None:
        pass

    # -- the hook ---------------------------------------------------------------------------

    @hookimpl(trylast=True)
    def voiced_recognize(self, transcript: Transcript, context: RunContext) -> Intent | None:
        text = transcript.text.strip()
        if not text:
            return None
        if not self.options.url:
            context.data.setdefault("intent_errors", []).append(
                {"recognizer": "llm", "reason": "not configured: set [stages.intent.llm] url"}
            )
            return None
        try:
            return self.recognize(text, speaker=context.speaker)
        except LlmError as exc:
            reason = str(exc)
        except Exception as exc:  # a fallback must never take the run down
            log.exception("llm recognizer failed")
            reason = f"{type(exc).__name__}: {exc}"
        log.warning("llm intent: %s (text %r)", reason, text)
        context.data.setdefault("intent_errors", []).append({"recognizer": "llm", "reason": reason})
        return None

    def recognize(self, text: str, speaker: str | None = None) -> Intent | None:
        """Ask the model; None when it says no intent fits; LlmError when it cannot be used.
        ``speaker``: who said it (an enrolled name, ``unknown``), told to the model."""
        if self._tools_work is not False:
            try:
                answer = self._ask(text, tools=True, speaker=speaker)
            except _NoToolSupport as exc:
                if self.options.mode == "tools":
                    raise LlmError(f"server refused tool calling: {exc}") from None
                log.info("llm: server has no tool calling (%s); using JSON answers", exc)
                self._tools_work = False
                answer = self._ask(text, tools=False, speaker=speaker)
        else:
            answer = self._ask(text, tools=False, speaker=speaker)
        return self._to_intent(text, answer)

    # -- the request ------------------------------------------------------------------------

    def _ask(self, text: str, tools: bool, speaker: str | None = None) -> dict[str, Any]:
        system = self._system_prompt(tools)
        if speaker is not None:
            who = "a voice nobody enrolled" if speaker == "unknown" else speaker.title()
            system += f"\nThe person speaking: {who}."
        body: dict[str, Any] = {
            "model": self.options.model,
            "temperature": self.options.temperature,
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": text},
            ],
        }
        if tools:
            body["tools"] = [self._tool()]
            body["tool_choice"] = {"type": "function", "function": {"name": TOOL_NAME}}
        else:
            body["response_format"] = {"type": "json_object"}
        reply = self._post("/chat/completions", body, refuse_tools=tools)
        try:
            message = reply["choices"][0]["message"]
        except (KeyError, IndexError, TypeError):
            raise LlmError("reply has no choices[0].message") from None
        if tools:
            calls = message.get("tool_calls") or []
            if not calls:
                if self.options.mode == "auto" and message.get("content"):
                    return _parse_json(message["content"])  # answered in text instead
                raise LlmError("model made no tool call")
            arguments = calls[0].get("function", {}).get("arguments", "")
            if isinstance(arguments, dict):
                return arguments
            return _parse_json(arguments)
        return _parse_json(message.get("content") or "")

    def _post(self, path: str, body: dict[str, Any], refuse_tools: bool) -> dict[str, Any]:
        """POST with a deadline for the whole exchange (a slow server cannot hold the run)."""
        url, user, password = split_credentials((self.options.url or "").rstrip("/") + path)
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.options.api_key is not None:
            headers["Authorization"] = f"Bearer {self.options.api_key.get_secret_value()}"
        elif user is not None:  # http://user:password@host/v1: basic auth, never in messages
            login = base64.b64encode(f"{user}:{password or ''}".encode()).decode()
            headers["Authorization"] = f"Basic {login}"
        request = urllib.request.Request(
            url, data=json.dumps(body).encode(), headers=headers, method="POST"
        )
        outcome: dict[str, Any] = {}

        def exchange() -> None:
            try:
                with urllib.request.urlopen(request, timeout=self.options.timeout) as response:
                    outcome["body"] = response.read()
            except BaseException as exc:
                outcome["error"] = exc

        worker = threading.Thread(target=exchange, name="voiced-llm-request", daemon=True)
        worker.start()
        worker.join(self.options.timeout)
        if worker.is_alive():
            raise LlmError(f"no answer from {url} within {self.options.timeout:g}s")
        error = outcome.get("error")
        if isinstance(error, urllib.error.HTTPError):
            detail = error.read()[:300].decode(errors="replace")
            if refuse_tools and error.code in (400, 404, 422, 501) and "tool" in detail.lower():
                raise _NoToolSupport(f"HTTP {error.code}: {detail}")
            raise LlmError(f"{url} answered HTTP {error.code}: {detail}")
        if isinstance(error, (TimeoutError, socket.timeout)):
            raise LlmError(f"no answer from {url} within {self.options.timeout:g}s")
        if isinstance(error, urllib.error.URLError):
            raise LlmError(f"cannot reach {url}: {error.reason}")
        if error is not None:
            raise LlmError(f"request to {url} failed: {type(error).__name__}: {error}")
        try:
            return json.loads(outcome["body"])
        except (ValueError, UnicodeDecodeError):
            raise LlmError(f"{url} did not answer JSON") from None

    # -- prompt and schema ------------------------------------------------------------------

    def _tool(self) -> dict[str, Any]:
        slot_props: dict[str, Any] = {}
        for slot in sorted({s for slots in self.intent_slots.values() for s in slots}):
            names = self.names.get(ENTITY_SLOTS.get(slot, ""), [])
            if names:
                slot_props[slot] = {"type": "string", "enum": names}
            else:
                slot_props[slot] = {"type": ["string", "number"]}
        return {
            "type": "function",
            "function": {
                "name": TOOL_NAME,
                "description": "Report which smart-home intent the user's sentence means.",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "intent": {"type": "string", "enum": [*self.intent_slots, NO_INTENT]},
                        "slots": {
                            "type": "object",
                            "properties": slot_props,
                            "additionalProperties": False,
                        },
                    },
                    "required": ["intent", "slots"],
                },
            },
        }

    def _system_prompt(self, tools: bool) -> str:
        intents = "\n".join(
            f"- {name}: slots {', '.join(slots) if slots else '(none)'}"
            for name, slots in self.intent_slots.items()
        )
        how = (
            f"Call the function {TOOL_NAME} exactly once."
            if tools
            else 'Answer with one JSON object only: {"intent": "...", "slots": {...}}.'
        )
        return (
            "You map a spoken smart-home command (it may contain speech-recognition errors) to "
            "one Home Assistant intent. Use only these intents and slot names:\n"
            f"{intents}\n"
            f"Entity names (slot 'name'): {json.dumps(self.names['entities'])}\n"
            f"Areas (slot 'area'): {json.dumps(self.names['areas'])}\n"
            f"Floors (slot 'floor'): {json.dumps(self.names['floors'])}\n"
            "Use names exactly as listed. Numbers are numbers (brightness 0-100, minutes...). "
            f'If nothing fits, use intent "{NO_INTENT}". {how}'
        )

    # -- checking the answer ----------------------------------------------------------------

    def _to_intent(self, text: str, answer: dict[str, Any]) -> Intent | None:
        name = answer.get("intent") or answer.get("name")
        if not isinstance(name, str):
            raise LlmError(f"answer names no intent: {json.dumps(answer)[:200]}")
        if name == NO_INTENT:
            return None
        if name not in self.intent_slots:
            raise LlmError(f"model answered unknown intent {name!r}")
        raw_slots = answer.get("slots") or {}
        if not isinstance(raw_slots, dict):
            raise LlmError("slots must be an object")
        slots = self._checked_slots(name, raw_slots)
        entities = []
        if self._home is not None and any(k in slots for k in ("name", "area", "floor")):
            entities = [e.id for e in self._home.match(slots)]
        return Intent(
            name, slots, text, 0.5, "llm",
            {"response": "default", "entities": entities, "model": self.options.model},
        )  # fmt: skip

    def _checked_slots(self, name: str, raw_slots: dict[str, Any]) -> dict[str, Any]:
        """The non-empty slots of an answer for intent ``name``, names in their canonical
        spelling and numbers as numbers; LlmError for a slot or name that is not known."""
        allowed = set(self.intent_slots[name])
        slots: dict[str, Any] = {}
        for slot, value in raw_slots.items():
            if value in (None, "", []):
                continue
            if allowed and slot not in allowed:
                raise LlmError(f"slot {slot!r} is not a slot of {name}")
            slots[slot] = _number(self._canonical(slot, value))
        return slots

    def _canonical(self, slot: str, value: Any) -> Any:
        """A name slot's value as the home spells it (LlmError when unknown); others as given."""
        kind = ENTITY_SLOTS.get(slot)
        if kind and self.names[kind]:
            canonical = {n.casefold(): n for n in self.names[kind]}
            if str(value).casefold() not in canonical:
                raise LlmError(f"unknown {slot} {value!r}")
            return canonical[str(value).casefold()]
        return value

    # -- helpers ----------------------------------------------------------------------------

    def _hassil_stage(self) -> Any:
        stage = getattr(self.app, "stage", None)
        if stage is None:
            return None
        try:
            found = stage("intent", "hassil")
        except Exception:  # not configured: use our own home file
            return None
        return found if hasattr(found, "intent_slots") and found.intent_slots else None

    def _own_home(self) -> Any:
        if not self.options.home:
            return None
        from voiced_plugins.intent_hassil import load_home, resolve_path

        return load_home(resolve_path(self.options.home, self.app))


class _NoToolSupport(Exception):
    pass


def _parse_json(text: str) -> dict[str, Any]:
    text = text.strip()
    if text.startswith("```"):  # models like to fence JSON
        text = text.strip("`").removeprefix("json").strip()
    try:
        value = json.loads(text)
    except ValueError:
        raise LlmError(f"model answered invalid JSON: {text[:120]!r}") from None
    if not isinstance(value, dict):
        raise LlmError("model answered JSON that is not an object")
    return value


def _number(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return value
        return int(number) if number.is_integer() else number
    return value


@hookimpl
def voiced_register_stages(register: Any) -> None:
    register(
        "intent", "llm", LlmIntent, options=LlmOptions,
        description="fallback: an OpenAI-compatible chat model picks the intent (tools or JSON)",
    )  # fmt: skip
