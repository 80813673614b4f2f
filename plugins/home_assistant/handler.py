"""Handler ``home-assistant``: Home Assistant executes the intent and says what to answer.

Recognized intents go to Home Assistant's intent API (``POST /api/intent/handle``), so they
act on the user's real entities with Home Assistant's own handlers; its spoken response is
voiced's answer. What Home Assistant refuses (unknown name, nothing matched) is answered with
its short error text and an ``intent-refused`` event. Put local handlers (``builtin``: timers,
time, never mind) before this one in ``pipeline.handler``.
"""

from __future__ import annotations

import json
import logging
import urllib.error
import urllib.request
from typing import Any

from pydantic import Field

from voiced.api.app import RunContext
from voiced.api.events import Event
from voiced.api.hooks import hookimpl
from voiced.api.intents import Intent, Response

from .http_reply import read_reply
from .options import HomeAssistantConnection

log = logging.getLogger(__name__)

REFUSED_EVENT = "intent-refused"
ERROR_TEXT_BYTES = 4096
"""What is read of an HTTP error's body: its first words are all that is said."""
PEER_EXECUTES = "peer_executes_intents"
"""``context.data`` flag: the requester (Home Assistant over Wyoming) runs the intent itself."""


class HandlerOptions(HomeAssistantConnection):
    unreachable_speech: str = Field(
        "Sorry, I can't reach Home Assistant.", description="said when the request fails"
    )
    refused_speech: str = Field(
        "Sorry, Home Assistant couldn't do that.",
        description="said when Home Assistant refuses without a text of its own",
    )


class HomeAssistantHandler:
    """Executes intents in Home Assistant; no model, nothing to load but the token."""

    name = "home-assistant"

    def __init__(self, options: HandlerOptions, app: Any = None) -> None:
        self.options = options
        self.app = app

    def load(self) -> None:
        self.options.access_token()

    def close(self) -> None:
        pass

    @hookimpl
    def voiced_handle(self, intent: Intent, context: RunContext) -> Response | None:
        if context.data.get(PEER_EXECUTES):  # Home Assistant asked over Wyoming: it runs the
            speech = self._answer(intent, list(intent.data.get("entities") or []))  # intent
            return Response(speech or "", self.name, data={"acted": False, PEER_EXECUTES: True})
        try:
            answer = self.handle_in_home_assistant(intent)
        except (OSError, ValueError) as exc:
            log.warning("home-assistant: %s failed: %s", intent.name, exc)
            self._refused(context, intent, "unreachable", str(exc))
            return Response(
                self.options.unreachable_speech,
                self.name,
                data={"acted": False, "error": "unreachable", "message": str(exc)},
            )
        return self._answered(context, intent, answer)

    def _answered(self, context: RunContext, intent: Intent, answer: dict[str, Any]) -> Response:
        """Home Assistant's intent response as voiced's: done, or refused with a short why."""
        speech = spoken(answer)
        data = answer.get("data") or {}
        success = [t.get("id") for t in data.get("success") or [] if isinstance(t, dict)]
        kind = answer.get("response_type")
        if kind == "error" or (kind == "action_done" and not success and not data.get("failed")):
            # HA's intent API answers a target it can't find with its exception's text
            # ("Entities matching: MatchTargetsConstraints(...)"): say something people read
            code = str(data.get("code") or "no_valid_targets")
            said = speech if kind == "error" else ""
            if self._unknown_name(intent, code):
                code, said = "no_valid_targets", ""
            self._refused(context, intent, code, speech)
            return Response(
                self.refusal(intent, code, said),
                self.name,
                data={"acted": False, "error": code, "message": speech},
            )
        if not speech:  # HA's intent handlers leave the words to the conversation agent
            speech = self._answer(intent, success) or "Done."
        return Response(
            speech,
            self.name,
            data={"acted": kind == "action_done", "entities": success, "response_type": kind},
        )

    def refusal(self, intent: Intent, code: str, speech: str) -> str:
        """A short answer for what Home Assistant could not do."""
        if speech:
            return speech
        if code != "no_valid_targets":
            return self.options.refused_speech
        slots = ha_slots(intent.slots)
        name, area = slots.get("name"), slots.get("area") or slots.get("floor")
        if name and area:
            return f"Sorry, Home Assistant has no {name} in the {area}."
        if name or area:
            return f"Sorry, Home Assistant has no device called {name or area}."
        return self.options.refused_speech

    def _unknown_name(self, intent: Intent, code: str) -> bool:
        """Whether Home Assistant failed because the intent names what its home lacks: its
        intent API answers that with a bare HTTP 500 up to 2025.x, and from 2026.x with
        ``failed_to_handle`` and its exception's text ("No entities matched the name ...")."""
        return (code.startswith("http_") or code == "failed_to_handle") and not self._names_known(
            intent
        )

    def _names_known(self, intent: Intent) -> bool:
        """Whether the home (Home Assistant's, as the recognizer has it) has what the intent
        names: Home Assistant's intent API answers an unknown name with a bare HTTP 500."""
        home = getattr(self._recognizer(), "home", None)
        if home is None:
            return not any(k in intent.slots for k in ("name", "area", "floor"))
        return bool(home.match(ha_slots(intent.slots)))

    def _recognizer(self) -> Any:
        return self.app.stage("intent", "hassil") if self.app is not None else None

    def _answer(self, intent: Intent, entity_ids: list[str]) -> str | None:
        """Home Assistant's response template for the intent, as its own agent says it."""
        recognizer = self._recognizer()
        responses = getattr(recognizer, "responses", None)
        if not responses:
            return None
        from voiced_plugins.intent_hassil.responses import response_for

        home = recognizer.home
        matched = [e for e in (home.entity(i) for i in entity_ids) if e is not None]
        return response_for(intent, responses, matched)

    def handle_in_home_assistant(self, intent: Intent) -> dict[str, Any]:
        """POST the intent to Home Assistant; its intent response as a dict."""
        body = {"name": intent.name, "data": ha_slots(intent.slots)}
        request = urllib.request.Request(
            f"{self.options.url}/api/intent/handle",
            data=json.dumps(body).encode(),
            headers={
                "Authorization": f"Bearer {self.options.access_token()}",
                "Content-Type": "application/json",
            },
            method="POST",
        )
        try:
            with urllib.request.urlopen(
                request, timeout=self.options.timeout, context=self.options.ssl_context()
            ) as reply:
                answer = json.loads(self._body(reply))
        except urllib.error.HTTPError as exc:
            text = exc.read(ERROR_TEXT_BYTES).decode("utf-8", "replace")[:300]
            if exc.code == 404:
                raise ValueError(
                    "Home Assistant has no /api/intent/handle: add `intent:` to its "
                    "configuration.yaml"
                ) from None
            if exc.code == 401:
                raise ValueError("Home Assistant refused the token (401)") from None
            try:
                answer = json.loads(text)  # an intent error comes back as a response body
            except ValueError:  # e.g. 500 for an intent Home Assistant has no handler for
                log.warning("home-assistant: %s answered %s: %s", intent.name, exc.code, text)
                return {"response_type": "error", "data": {"code": f"http_{exc.code}"}}
        if not isinstance(answer, dict):
            raise ValueError(f"Home Assistant answered {answer!r:.80}, not an intent response")
        return answer

    def _body(self, reply: Any) -> bytes:
        opts = self.options
        return read_reply(reply, opts.max_reply_bytes, opts.timeout)

    def _refused(self, context: RunContext, intent: Intent, code: str, message: str) -> None:
        if self.app is None:
            return
        self.app.emit(
            Event(
                REFUSED_EVENT,
                context.run_id,
                context.site_id,
                {"intent": intent.name, "slots": intent.slots, "code": code, "message": message},
            )
        )


def ha_slots(slots: dict[str, Any]) -> dict[str, Any]:
    """voiced's slot values as Home Assistant's intent API takes them (plain values)."""
    plain = {}
    for key, value in slots.items():
        if isinstance(value, dict):
            value = value.get("value", value.get("text"))
        plain[key] = value
    return plain


def spoken(answer: dict[str, Any]) -> str:
    speech = answer.get("speech") or {}
    return str((speech.get("plain") or {}).get("speech") or "").strip()
