"""The ``mqtt`` service: events out, commands in, availability, discovery, Hermes.

Threads: ``voiced_event`` (daemon loop) only appends to a bounded queue; one publisher
thread owns everything after that (state, in-flight tracking, ordering); paho's thread
runs the callbacks and hands signals to the publisher or coroutines to the daemon loop.

Delivery: a message handed to paho stays in paho's session until the broker acknowledges
it (QoS 1) and paho resends it after a reconnect. Only ``max_inflight`` messages are
handed over at a time, and only while connected; everything else waits in our own
bounded queue (oldest dropped, counted). After a reconnect nothing new is sent until the
resent messages are acknowledged, so the order on the broker stays the order of events.
"""

from __future__ import annotations

import asyncio
import json
import logging
import queue
import threading
import time
from collections import OrderedDict, deque
from dataclasses import dataclass
from typing import Any

from voiced.api.events import Event, error_event
from voiced.api.hooks import hookimpl
from voiced.api.text import CommandRefused, TextTooLong

from .broker import EmbeddedBroker, PortBusy
from .client import MqttClient, Will, rc_ok
from .commands import BadCommand, parse_mute, parse_name, parse_say
from .discovery import device_config
from .hermes import TTS_SAY, hermes_messages, parse_tts_say
from .options import MqttOptions
from .state import SiteState
from .topics import Topics, topic_level

log = logging.getLogger(__name__)

DRAIN_TIMEOUT = 10.0
# Sites whose last state is kept for re-announcing after a reconnect; past it the least recently
# active sites the daemon no longer has (satellites that left) are forgotten. Their retained
# topics stay on the broker.
MAX_REMEMBERED_SITES = 256


@dataclass(frozen=True)
class Message:
    topic: str
    payload: str | bytes
    qos: int = 1
    retain: bool = False


class MqttService:
    """Publishes every pipeline event and takes commands over MQTT."""

    def __init__(self, options: MqttOptions | None = None, app: Any = None) -> None:
        self.options = options or MqttOptions()
        self.app = app
        settings = getattr(app, "settings", None)
        self.site_id = self.options.site(getattr(settings, "site_id", None) or "default")
        self.topics = Topics(self.options.prefix, self.options.discovery_prefix)
        self.device_id, self.device_name = self.options.device(self.site_id)
        self.client: MqttClient | None = None
        self.embedded: EmbeddedBroker | None = None
        self.dropped = 0
        self.delivered = 0
        self._items: deque[Event | Message] = deque()
        self._items_lock = threading.Lock()
        self._dropped_this_outage = 0
        self._why_dropped: str | None = None  # said when the drops are reported
        self._signals: queue.SimpleQueue[tuple[str, Any]] = queue.SimpleQueue()
        self._wake = threading.Event()
        self._inflight: OrderedDict[int, Message] = OrderedDict()
        self._retry: deque[Message] = deque()
        self._sites: dict[str, SiteState] = {}
        self._connected = False
        self._refresh = False
        self._announce = False
        self._drain_until = 0.0
        self._resending: set[int] = set()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    # -- stage lifecycle -------------------------------------------------------------

    def load(self) -> None:
        """Nothing slow: options were validated; the connection starts in ``start()``."""
        self.options.endpoint()

    async def start(self) -> None:
        options = self.options
        if not options.broker_configured and options.embedded == "auto":
            options = await self._start_embedded(options)
        self.client = MqttClient(
            options,
            will=Will(self.topics.status, "offline"),
            on_connect=lambda: self._signal("connected"),
            on_disconnect=lambda: self._signal("disconnected"),
            on_message=self._on_message,
            on_publish=lambda mid: self._signal("ack", mid),
            on_error=self._on_client_error,
            on_rebuilt=lambda: self._signal("rebuilt"),
        )
        self.client.subscribe(self.topics.command_filter, 1)
        if options.discovery:
            self.client.subscribe(self.topics.ha_status, 1)
        if options.hermes:
            self.client.subscribe(TTS_SAY, 1)
        self._sites.setdefault(self.site_id, SiteState())
        self._stopping.clear()
        self._thread = threading.Thread(target=self._run, name="voiced-mqtt-out", daemon=True)
        self._thread.start()
        self.client.start()
        log.info("MQTT service publishing to %s under %s/", self.client.broker, options.prefix)

    async def _start_embedded(self, options: MqttOptions) -> MqttOptions:
        broker = EmbeddedBroker(options.embedded_port)
        try:
            await broker.start()
            self.embedded = broker
        except PortBusy as exc:
            log.error("%s; connecting to whatever listens there", exc)
            self._emit(error_event("mqtt", str(exc), site_id=self.site_id))
        # amqtt speaks MQTT 3.1.1 only and does not answer an MQTT 5 CONNECT with a will
        protocol = "3.1.1" if self.embedded is not None else options.protocol
        return options.model_copy(
            update={"host": broker.host, "port": broker.port, "protocol": protocol}
        )

    async def stop(self) -> None:
        await asyncio.to_thread(self._shutdown)
        if self.embedded is not None:
            await self.embedded.stop()
            self.embedded = None

    def close(self) -> None:
        if self._thread is not None:
            self._shutdown()

    def _shutdown(self) -> None:
        """Flush what can be flushed, say ``offline``, disconnect."""
        thread, self._thread = self._thread, None
        if thread is not None:
            self._stopping.set()
            self._wake.set()
            thread.join(self.options.flush_timeout + 2.0)
        client = self.client
        if client is None:
            return
        if client.connected:
            try:
                info = client.publish(self.topics.status, "offline", qos=1, retain=True)
                info.wait_for_publish(timeout=2.0)
            except (RuntimeError, ValueError) as exc:
                log.warning("MQTT could not publish offline status: %s", exc)
        client.stop()
        left = len(self._items) + len(self._inflight) + len(self._retry)
        if left:
            log.warning("MQTT stopped with %d messages undelivered (broker away)", left)

    # -- in: events and messages to publish ------------------------------------------

    @hookimpl
    def voiced_event(self, event: Event) -> None:
        """Queue the event for the publisher thread; never blocks."""
        self._enqueue(event)

    def publish(
        self, topic: str, payload: str | bytes | dict | list, qos: int = 1, retain: bool = False
    ) -> None:
        """Publish through the service's queue (ordered with events, survives broker loss)."""
        if isinstance(payload, dict | list):
            payload = json.dumps(payload, ensure_ascii=False, default=str)
        self._enqueue(Message(topic, payload, qos, retain))

    def stats(self) -> dict[str, Any]:
        return {
            "connected": bool(self.client and self.client.connected),
            "queued": len(self._items),
            "inflight": len(self._inflight),
            "dropped": self.dropped,
            "delivered": self.delivered,
        }

    def _enqueue(self, item: Event | Message) -> None:
        with self._items_lock:
            if len(self._items) >= self.options.queue_size:
                self._items.popleft()
                self.dropped += 1
                self._dropped_this_outage += 1
                first = self._dropped_this_outage == 1
                if first:
                    self._why_dropped = self._why_behind()
            else:
                first = False
            self._items.append(item)
        if first:
            log.warning(
                "MQTT queue full (%d, %s): dropping the oldest events",
                self.options.queue_size,
                self._why_dropped,
            )
        self._wake.set()

    def _why_behind(self) -> str:
        """Why the queue filled: the broker is away, or events come faster than it takes them."""
        broker = self.client.broker if self.client else "?"
        if self.client is not None and self.client.connected:
            return f"events came faster than broker {broker} took them"
        return f"broker {broker} away"

    def _signal(self, name: str, value: Any = None) -> None:
        self._signals.put((name, value))
        self._wake.set()

    # -- the publisher thread --------------------------------------------------------

    def _run(self) -> None:
        deadline = None
        while True:
            self._wake.wait(0.25)
            self._wake.clear()
            self._take_signals()
            self._send_what_we_can()
            if self._stopping.is_set():
                if deadline is None:
                    deadline = time.monotonic() + self.options.flush_timeout
                idle = not (self._items or self._inflight or self._retry)
                if idle or not self._connected or time.monotonic() > deadline:
                    return

    def _take_signals(self) -> None:
        while True:
            try:
                name, value = self._signals.get_nowait()
            except queue.Empty:
                return
            if name == "ack":
                self._resending.discard(value)
                if self._inflight.pop(value, None) is not None:
                    self.delivered += 1
            elif name == "connected":
                self._connected = True
                self._refresh = True
                self._resending = set(self._inflight)
                self._drain_until = time.monotonic() + DRAIN_TIMEOUT
            elif name == "disconnected":
                self._connected = False
            elif name == "rebuilt":
                # a new paho client does not know the old one's unacknowledged messages
                self._retry.extendleft(reversed(list(self._inflight.values())))
                self._inflight.clear()
                self._resending.clear()
            elif name == "announce":
                self._announce = True

    def _can_send(self) -> bool:
        if not self._connected or len(self._inflight) >= self.options.max_inflight:
            return False
        # after a reconnect paho resends its unacknowledged messages first: wait for them
        return not (self._resending and time.monotonic() < self._drain_until)

    def _send_what_we_can(self) -> None:
        while self._can_send():
            if self._refresh or self._announce:
                messages = self._refresh_messages(full=self._refresh)
                self._refresh = self._announce = False
            elif self._retry:
                messages = [self._retry.popleft()]
            else:
                with self._items_lock:
                    item = self._items.popleft() if self._items else None
                if item is None:
                    self._report_drops()  # once the survivors are out, so none is evicted
                    return
                messages = self._expand(item)
            for message in messages:
                self._send(message)

    def _send(self, message: Message) -> None:
        client = self.client
        if client is None:
            return
        try:
            info = client.publish(message.topic, message.payload, message.qos, message.retain)
        except (ValueError, TypeError) as exc:
            log.error("MQTT cannot publish on %s: %s", message.topic, exc)
            return
        if not rc_ok(info.rc):
            log.error("MQTT publish on %s failed: %s", message.topic, info.rc)
            return
        if message.qos > 0:
            self._inflight[info.mid] = message

    def _report_drops(self) -> None:
        with self._items_lock:
            dropped, self._dropped_this_outage = self._dropped_this_outage, 0
        if dropped:
            why = self._why_dropped or self._why_behind()
            self._why_dropped = None
            text = f"MQTT queue full ({why}): dropped the {dropped} oldest events"
            log.warning(text)
            self._emit(error_event("mqtt", text, site_id=self.site_id, dropped=dropped))

    # -- what to publish -------------------------------------------------------------

    def _expand(self, item: Event | Message) -> list[Message]:
        if isinstance(item, Message):
            return [item]
        qos = self.options.qos
        site = item.site_id or self.site_id
        messages = [Message(self.topics.event(site, str(item.type)), item.to_json(), qos)]
        if self.options.publish_audio:
            for value in (item.data or {}).values():
                if isinstance(value, bytes | bytearray):
                    messages.append(Message(self.topics.audio(site, str(item.type)), value, qos))
        state = self._site_state(site)
        try:
            changed = state.apply(item)
            hermes = hermes_messages(item) if self.options.hermes else []
        except (KeyError, TypeError, ValueError) as exc:  # a plugin's event in another shape
            log.warning("MQTT: a %s event not in the documented shape (%r)", item.type, exc)
            return messages
        messages += [self._state_message(site, state, name) for name in changed]
        for topic, payload in hermes:
            messages.append(Message(topic, json.dumps(payload, default=str), qos))
        return messages

    def _site_state(self, site: str) -> SiteState:
        """The site's retained state, kept most recently active last and bounded."""
        state = self._sites.pop(site, None) or SiteState()
        self._sites[site] = state
        excess = len(self._sites) - MAX_REMEMBERED_SITES
        for old in list(self._sites) if excess > 0 else ():
            if excess <= 0:
                break
            if old != self.site_id and (self.app is None or not self.app.knows_site(old)):
                del self._sites[old]
                excess -= 1
        return state

    def _state_message(self, site_id: str, state: SiteState, name: str) -> Message:
        value: Any = getattr(state, name)
        if name == "muted":
            payload = "ON" if value else "OFF"
        elif name == "intent":
            payload = json.dumps(value, ensure_ascii=False, default=str)
        else:
            payload = "" if value is None else str(value)
        return Message(self.topics.state(site_id, name), payload, self.options.qos, True)

    def _refresh_messages(self, full: bool) -> list[Message]:
        """On (re)connect: online, the discovery config, every retained state topic."""
        qos = self.options.qos
        messages = [Message(self.topics.status, "online", qos, True)] if full else []
        if self.options.discovery:
            config = device_config(self.topics, self.site_id, self.device_id, self.device_name)
            topic = self.topics.device_config(self.device_id)
            messages.append(Message(topic, json.dumps(config), qos, True))
        for site_id, state in self._sites.items():
            for name in ("state", "transcript", "intent", "response", "speaker", "muted"):
                if getattr(state, name) is not None:
                    messages.append(self._state_message(site_id, state, name))
        return messages

    # -- commands in (paho's thread) -------------------------------------------------

    def _on_message(self, topic: str, payload: bytes) -> None:
        if topic == self.topics.ha_status:
            if payload.strip().lower() == b"online":
                log.info("Home Assistant is online: announcing the device again")
                self._signal("announce")
            return
        if topic == TTS_SAY:
            try:
                text, site = parse_tts_say(payload)
            except ValueError as exc:
                self._bad_command(topic, str(exc), self.site_id)
                return
            self._call(self._app_say(text, site or self.site_id), "hermes say", site)
            return
        parsed = self.topics.parse_command(topic)
        if parsed is None:
            return
        level, command = parsed
        site_id = self._site_of_level(level)
        if self.app is not None and not self.app.knows_site(site_id):
            # reported at the daemon's own site: an unknown one gets no topics of its own
            self._bad_command(topic, f"no site {site_id!r} here", self.site_id)
            return
        try:
            self._command(site_id, command, payload)
        except BadCommand as exc:
            self._bad_command(topic, str(exc), site_id)

    def _site_of_level(self, level: str) -> str:
        """The site whose topic level this is ("kids_room" for the satellite "kids/room")."""
        if level in self._sites:
            return level
        return next((site for site in list(self._sites) if topic_level(site) == level), level)

    def _command(self, site_id: str, command: str, payload: bytes) -> None:
        if command == "say":
            text = parse_say(payload)
            self._call(self._app_say(text, site_id), "say", site_id)
        elif command == "listen":
            self._call(self._app_listen(site_id), "listen", site_id)
        elif command == "mute":
            muted = parse_mute(payload)
            self._call(self._app_mute(muted, site_id), "mute", site_id)
        elif command == "cancel":
            self._call(self._app_cancel(site_id), "cancel", site_id)
        elif command == "enroll":
            name = parse_name(payload)
            self._call(self._app_enroll(name, site_id), "enroll", site_id)
        elif command == "forget-speaker":
            name = parse_name(payload)
            self._call(self._app_forget(name), "forget-speaker", site_id)
        else:
            raise BadCommand(
                f"unknown command {command!r}; known: say, listen, mute, cancel, enroll, "
                "forget-speaker"
            )

    def _bad_command(self, topic: str, reason: str, site_id: str) -> None:
        log.warning("MQTT ignored a malformed command on %s: %s", topic, reason)
        self._emit(error_event("mqtt", f"malformed command on {topic}: {reason}", site_id=site_id))

    async def _app_say(self, text: str, site_id: str) -> None:
        await self.app.say(text, site_id)

    async def _app_listen(self, site_id: str) -> None:
        await self.app.listen(site_id)

    async def _app_mute(self, muted: bool, site_id: str) -> None:
        self.app.set_muted(muted, site_id)  # the core's state event reports it

    async def _app_cancel(self, site_id: str) -> None:
        self.app.cancel(site_id)

    async def _app_enroll(self, name: str, site_id: str) -> None:
        await self.app.enroll_speaker(name, site_id)

    async def _app_forget(self, name: str) -> None:
        if not self.app.forget_speaker(name):
            raise CommandRefused(f"nobody called {name!r} is enrolled")

    def _call(self, coro: Any, what: str, site_id: str | None) -> None:
        """Run a command on the daemon's loop; its failure becomes an error event."""
        if self.app is None:
            coro.close()
            log.warning("MQTT command %s ignored: no running daemon", what)
            return

        async def guarded() -> None:
            try:
                await coro
            except asyncio.CancelledError:
                raise
            except (CommandRefused, TextTooLong, KeyError) as exc:  # refused, not broken
                log.warning("MQTT command %s refused: %s", what, exc)
                known = site_id is not None and self.app.knows_site(site_id)
                where = site_id if known else self.site_id
                self._emit(error_event("mqtt", f"command {what} refused: {exc}", site_id=where))
            except Exception as exc:
                log.exception("MQTT command %s failed", what)
                self._emit(
                    error_event(
                        "mqtt", f"command {what} failed: {exc}", site_id=site_id or self.site_id
                    )
                )

        self.app.call_threadsafe(guarded())

    def _on_client_error(self, message: str, code: int | None) -> None:
        self._emit(error_event("mqtt", message, site_id=self.site_id, reason_code=code))

    def _emit(self, event: Event) -> None:
        if self.app is not None:
            self.app.emit(event)
        else:
            self.voiced_event(event)
