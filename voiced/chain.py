"""An ordered chain of engines of one kind: the first that works serves, the next takes over."""

from __future__ import annotations

import inspect
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from voiced.events import EngineFallback, Event, StageLoaded
from voiced.missing_extra import missing_gpu_module
from voiced.stages import AsrStream, StageCall

log = logging.getLogger(__name__)


def takes_call(function: Callable[..., Any]) -> bool:
    """Whether an engine method declares the ``call`` keyword (``voiced.stages.StageCall``)."""
    target = getattr(function, "__func__", function)
    known = _TAKES_CALL.get(target)
    if known is None:
        try:
            parameter = inspect.signature(target).parameters.get("call")
        except (TypeError, ValueError):  # a builtin without a signature
            parameter = None
        keyword = (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        known = parameter is not None and parameter.kind in keyword
        _TAKES_CALL[target] = known
    return known


_TAKES_CALL: dict[Any, bool] = {}


class ChainError(RuntimeError):
    """Every engine of the chain failed; the message lists each one's reason."""


class EngineChain:
    """Engines in configured order. One that fails to load is skipped; one that fails at run
    time hands that call to the next and sits out ``retry_after`` seconds; events say so."""

    def __init__(
        self,
        kind: str,
        engines: list[tuple[str, Any]],
        emit: Callable[[Event], None],
        retry_after: float = 300.0,
        site_id: str = "default",
    ) -> None:
        self.kind = kind
        self.site_id = site_id  # the daemon's own site: where load events are reported
        self.engines = engines
        self.emit = emit
        self.retry_after = retry_after
        self.loaded: list[tuple[str, Any]] = []
        self.load_errors: dict[str, str] = {}
        self._resting_until: dict[str, float] = {}
        self._lock = threading.Lock()

    def load(self) -> None:
        """Load every engine (in this thread); at least one must load."""
        for index, (name, engine) in enumerate(self.engines):
            started = time.monotonic()
            try:
                engine.load()
            except Exception as exc:
                self._load_failed(index, name, exc)
                continue
            self.loaded.append((name, engine))
            info = dict(getattr(engine, "info", {}) or {})
            seconds = round(time.monotonic() - started, 3)
            self.emit(StageLoaded(self.kind, name, seconds, info).event(None, self.site_id))
        if not self.loaded:
            reasons = "; ".join(f"{n}: {r}" for n, r in self.load_errors.items())
            raise ChainError(f"no {self.kind} engine could load ({reasons})")

    def _load_failed(self, index: int, name: str, exc: Exception) -> None:
        """Log and report an engine that did not load: once, at INFO while another follows."""
        reason = f"{type(exc).__name__}: {exc}"
        self.load_errors[name] = reason
        rest = [n for n, _ in self.engines[index + 1 :]]
        missing = missing_gpu_module(exc)
        if missing and rest:
            # A CPU install without the GPU extra: normal, not a fault.
            log.debug("%s engine %s not used: %s", self.kind, name, reason)
            reason = f"GPU engine not installed ({name} needs {missing}); using {rest[0]}"
            log.info("%s: %s", self.kind, reason)
        else:
            log.log(
                logging.INFO if rest else logging.WARNING,
                "%s engine %s not used: %s%s",
                self.kind,
                name,
                reason,
                f"; trying {rest[0]}" if rest else "",
            )
        self._fallback(name, reason, index, "load")

    @property
    def active(self) -> tuple[str, Any]:
        now = time.monotonic()
        with self._lock:
            for name, engine in self.loaded:
                if self._resting_until.get(name, 0.0) <= now:
                    return name, engine
        return self.loaded[0]

    def call(
        self,
        method: str,
        *args: Any,
        run_id: str | None = None,
        site_id: str = "default",
        draft: bool = False,
    ) -> tuple[str, Any]:
        """Call ``method`` on the first healthy engine; returns (engine name, result).
        ``draft``: a speculative reading of run ``run_id`` (an engine failing at it is the
        daemon's fact, not the run's: its event names no run)."""
        errors: list[str] = []
        first, _ = self.active
        order = self._order_from(first)
        call = StageCall(run_id, site_id, draft)
        for position, (name, engine) in enumerate(order):
            try:
                function = getattr(engine, method)
                if takes_call(function):
                    return name, function(*args, call=call)
                return name, function(*args)
            except Exception as exc:
                reason = f"{type(exc).__name__}: {exc}"
                errors.append(f"{name}: {reason}")
                nxt = order[position + 1][0] if position + 1 < len(order) else None
                self._failed(name, reason, nxt, None if draft else run_id, site_id)
        raise ChainError(f"every {self.kind} engine failed ({'; '.join(errors)})")

    def open_stream(
        self, run_id: str | None, site_id: str, language: str | None = None
    ) -> tuple[str, AsrStream] | None:
        """A stream to the active engine if it offers one (``Asr.open_stream``), else None.
        Called on the event loop when speech starts: the engine's opener must not block."""
        name, engine = self.active
        opener = getattr(engine, "open_stream", None)
        if opener is None:
            return None
        try:
            stream = opener(StageCall(run_id, site_id), language)
        except Exception as exc:
            log.info("%s engine %s: no stream (%s: %s)", self.kind, name, type(exc).__name__, exc)
            return None
        return (name, stream) if stream is not None else None

    def finish_stream(
        self,
        name: str,
        stream: AsrStream,
        audio: bytes,
        language: str | None = None,
        *,
        run_id: str | None = None,
        site_id: str = "default",
    ) -> tuple[str, Any]:
        """The streamed utterance's transcript; when the stream failed, the whole utterance
        goes to the chain (the failed engine rests, so the next one serves)."""
        try:
            return name, stream.finish(audio, language)
        except Exception as exc:
            names = [n for n, _ in self.loaded]
            rest = names[names.index(name) + 1 :] + names[: names.index(name)]
            self._failed(
                name, f"{type(exc).__name__}: {exc}", next(iter(rest), None), run_id, site_id
            )
        return self.call("transcribe", audio, language, run_id=run_id, site_id=site_id)

    def close(self) -> None:
        for _, engine in self.loaded:
            engine.close()

    def _failed(
        self, name: str, reason: str, nxt: str | None, run_id: str | None, site_id: str
    ) -> None:
        with self._lock:
            self._resting_until[name] = time.monotonic() + self.retry_after
        log.warning("%s engine %s failed: %s; next: %s", self.kind, name, reason, nxt)
        self.emit(EngineFallback(self.kind, name, reason, "run", nxt).event(run_id, site_id))

    def _order_from(self, first: str) -> list[tuple[str, Any]]:
        names = [n for n, _ in self.loaded]
        start = names.index(first)
        return self.loaded[start:] + self.loaded[:start]

    def _fallback(self, name: str, reason: str, index: int, phase: str) -> None:
        rest = [n for n, _ in self.engines[index + 1 :]]
        fallback = EngineFallback(self.kind, name, reason, phase, rest[0] if rest else None)
        self.emit(fallback.event(None, self.site_id))
