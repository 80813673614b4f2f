"""Intents from a remote Wyoming intent or handle service (another voiced, any Wyoming agent).

A ``handle`` service gets the sentence as ``transcript`` and answers ``handled`` (it acted and
says what to answer), ``intent`` (it recognized an intent it leaves to us) or ``not-handled``;
an ``intent`` service gets ``recognize`` and answers ``intent`` or ``not-recognized``. The
stage is a recognizer in ``pipeline.intent`` like hassil: in list order among the template
recognizers (both are ``tryfirst``), so ``intent = ["wyoming:nas:10700", "hassil"]`` asks the
remote first and hassil when it is down or does not know the sentence. A remote that is down
or slow gives an ``engine-fallback`` event naming the reason and the next recognizer.
"""

from __future__ import annotations

import logging
from typing import Any, Literal

from pydantic import Field
from wyoming.asr import Transcript as WyTranscript
from wyoming.event import Event as WyEvent
from wyoming.handle import Handled, NotHandled
from wyoming.intent import Intent as WyIntent
from wyoming.intent import NotRecognized, Recognize

from voiced.api.events import EngineFallback
from voiced.api.hooks import hookimpl
from voiced.api.intents import Intent, Response, Transcript

from .options import RemoteOptions
from .peer import RemoteError, WyomingPeer

log = logging.getLogger(__name__)

HANDLED_REMOTELY = "WyomingHandled"
"""The intent name of a sentence the remote acted on itself (its ``handled`` answer carries
no intent name); this stage's own ``voiced_handle`` answers it with the remote's words."""

ANSWERS = (WyIntent, NotRecognized, Handled, NotHandled)


class RemoteIntentOptions(RemoteOptions):
    timeout: float = Field(
        10.0, gt=0, description="seconds the remote may take; slower goes to the next recognizer"
    )
    mode: Literal["auto", "handle", "recognize"] = Field(
        "auto",
        description="handle: send transcript (the remote may act); recognize: send recognize "
        "(intent only); auto: handle when the service offers it, else recognize",
    )


class RemoteWyomingIntent:
    """A recognizer (``voiced_recognize``) that asks a remote Wyoming service."""

    def __init__(self, options: RemoteIntentOptions, app: Any) -> None:
        self.options = options
        self.app = app
        self.peer = options.peer()
        self.name = f"wyoming:{self.peer.address.host}:{self.peer.address.port}"
        self.stage_name = "wyoming"  # make_stage sets the configured name
        self.info: dict[str, Any] = {"engine": self.name, "remote": str(self.peer.address)}
        self.mode: str | None = None if options.mode == "auto" else options.mode

    def load(self) -> None:
        """Ask the service what it offers; one that is down now may come back (per call)."""
        try:
            self._describe()
        except RemoteError as exc:
            log.warning("%s: not reachable at start-up (%s); will retry per call", self.name, exc)
            self.info["reachable"] = False

    def close(self) -> None:
        self.peer.close()

    @hookimpl(tryfirst=True)
    def voiced_recognize(self, transcript: Transcript, context: Any) -> Intent | None:
        try:
            mode = self.mode or self._describe()
            request = (
                WyTranscript(text=transcript.text, language=transcript.language)
                if mode == "handle"
                else Recognize(text=transcript.text)
            )
            answer = self.peer.request([request.event()], _is_answer)[-1]
        except RemoteError as exc:
            self._fell_back(str(exc), context)
            return None
        return self._intent(answer, transcript, context)

    @hookimpl(tryfirst=True)
    def voiced_handle(self, intent: Intent, context: Any) -> Response | None:
        """The remote acted already: say its answer, act on nothing here."""
        if intent.name != HANDLED_REMOTELY or intent.recognizer != self.stage_name:
            return None
        data = {"acted": True, "remote": str(self.peer.address)}
        return Response(speech=intent.data.get("speech") or "", handler=self.stage_name, data=data)

    # -- internals --------------------------------------------------------------------------

    def _describe(self) -> str:
        self.info.update(describe_intent(self.peer))
        if self.mode is None:
            self.mode = "handle" if self.info["handle"] else "recognize"
        self.info["mode"] = self.mode
        return self.mode

    def _intent(self, answer: WyEvent, transcript: Transcript, context: Any) -> Intent | None:
        remote = str(self.peer.address)
        text = transcript.text
        if Handled.is_type(answer.type):
            speech = Handled.from_event(answer).text or ""
            data = {"remote": remote, "speech": speech}
            return Intent(HANDLED_REMOTELY, text=text, recognizer=self.stage_name, data=data)
        if WyIntent.is_type(answer.type):
            got = WyIntent.from_event(answer)
            slots = {e.name: e.value for e in got.entities}
            data = {"remote": remote, "speech": got.text or ""}
            return Intent(got.name, slots, text=text, recognizer=self.stage_name, data=data)
        said = (answer.data or {}).get("text") or ""
        reason = f"{remote} did not recognize it" + (f" ({said})" if said else "")
        _decline(context, self.stage_name, reason)
        return None

    def _fell_back(self, reason: str, context: Any) -> None:
        log.warning("intent %s failed: %s", self.stage_name, reason)
        _decline(context, self.stage_name, reason)
        app = self.app or getattr(context, "app", None)
        if app is None:
            return
        names = list(app.settings.pipeline.intent)
        after = names[names.index(self.stage_name) + 1 :] if self.stage_name in names else []
        fallback = EngineFallback("intent", self.stage_name, reason, "run", next(iter(after), None))
        run_id, site_id = getattr(context, "run_id", None), getattr(context, "site_id", "default")
        app.emit(fallback.event(run_id, site_id))


def _is_answer(event: WyEvent) -> bool:
    return any(kind.is_type(event.type) for kind in ANSWERS)


def _decline(context: Any, recognizer: str, reason: str) -> None:
    data = getattr(context, "data", None)
    if isinstance(data, dict):
        data.setdefault("intent_errors", []).append({"recognizer": recognizer, "reason": reason})


def describe_intent(peer: WyomingPeer) -> dict[str, Any]:
    """The service's intent and handle programs; RemoteError if it offers neither."""
    info = peer.describe()
    handle = [p for p in info.handle if p.installed]
    intent = [p for p in info.intent if p.installed]
    if not handle and not intent:
        raise RemoteError(f"{peer.address} offers no intent or handle service (see its info)")
    programs = handle or intent
    models = [m.name for p in programs for m in p.models if m.installed]
    return {
        "program": programs[0].name,
        "models": models,
        "handle": bool(handle),
        "reachable": True,
    }
