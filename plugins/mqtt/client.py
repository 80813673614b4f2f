"""A small interface over paho-mqtt 2.x: connect in the background, reconnect, report why.

paho runs its network loop on its own thread; every callback here runs there. Callers give
plain callables and must not block in them.
"""

from __future__ import annotations

import logging
import socket
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass

import paho.mqtt.client as paho
from paho.mqtt.enums import CallbackAPIVersion, MQTTErrorCode
from paho.mqtt.reasoncodes import ReasonCode

from .options import MqttOptions

log = logging.getLogger(__name__)

UNSUPPORTED_PROTOCOL = (1, 132)
AUTH_FAILED = (4, 5, 134, 135)


class _NoSocketTurn(logging.Filter):
    """paho's network thread logs a loop turn that finds no socket as an error ("Client is
    not connected. Socket: None"): it happens in a race with disconnect() or between its
    own reconnect tries, and paho then reconnects by itself. What the user must know (the
    connection lost or refused) this client logs itself; the turn goes to DEBUG."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.ERROR and str(record.msg).startswith(
            "Client is not connected"
        ):
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
            return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)
        return True


PAHO_LOG = logging.getLogger("voiced_plugins.mqtt.paho")
PAHO_LOG.addFilter(_NoSocketTurn())


@dataclass(frozen=True)
class Will:
    topic: str
    payload: str
    retain: bool = True
    qos: int = 1


class MqttClient:
    """One broker connection; subscriptions are (re)made on every connect."""

    def __init__(
        self,
        options: MqttOptions,
        *,
        will: Will | None = None,
        on_connect: Callable[[], None] = lambda: None,
        on_disconnect: Callable[[], None] = lambda: None,
        on_message: Callable[[str, bytes], None] = lambda topic, payload: None,
        on_publish: Callable[[int], None] = lambda mid: None,
        on_error: Callable[[str, int | None], None] = lambda message, code: None,
        on_rebuilt: Callable[[], None] = lambda: None,
    ) -> None:
        self.options = options
        self.endpoint = options.endpoint()
        self.will = will
        self.client_id = options.client_id or f"voiced-{uuid.uuid4().hex[:10]}"
        self._on_connect = on_connect
        self._on_disconnect = on_disconnect
        self._on_message = on_message
        self._on_publish = on_publish
        self._on_error = on_error
        self._on_rebuilt = on_rebuilt
        self._subscriptions: dict[str, int] = {}
        self._lock = threading.Lock()
        self.protocol = "3.1.1" if options.protocol == "3.1.1" else "5"
        self.connected = False
        self.last_error: str | None = None
        self._client: paho.Client | None = None
        self._stopped = False
        self._v5_unproven = self.protocol == "5" and options.protocol == "auto"

    @property
    def broker(self) -> str:
        return str(self.endpoint)

    def subscribe(self, topic_filter: str, qos: int = 1) -> None:
        """Subscribe now if connected, and again after every reconnect."""
        self._subscriptions[topic_filter] = qos
        client = self._client
        if client is not None and self.connected:
            client.subscribe(topic_filter, qos)

    def start(self) -> None:
        """Connect in the background; returns at once (the broker may be down).

        Starting a started client does nothing: a second paho client with the same id would
        take the session over, and the two would throw each other off for ever.
        """
        if self._client is not None and not self._stopped:
            return
        self._connect()

    def _connect(self) -> None:
        self._stopped = False
        self._client = self._build()
        self._client.connect_async(
            self.endpoint.host, self.endpoint.port, keepalive=self.options.keepalive
        )
        self._client.loop_start()

    def publish(self, topic: str, payload: str | bytes, qos: int = 1, retain: bool = False):
        """Hand a message to paho; returns its ``MQTTMessageInfo`` (``mid``, ``rc``)."""
        if self._client is None:
            raise RuntimeError("MQTT client not started")
        return self._client.publish(topic, payload, qos=qos, retain=retain)

    def stop(self) -> None:
        """Disconnect cleanly (no will is sent) and stop paho's thread."""
        self._stopped = True
        client = self._client
        if client is None:
            return
        # paho's network thread may take one more turn after disconnect() closed the socket
        # and log it: nothing of that turn is news (how the disconnect went comes to
        # _disconnected). The turn may start before this line: _NoSocketTurn covers it.
        client.disable_logger()
        client.disconnect()
        client.loop_stop()
        self.connected = False

    # -- paho side -------------------------------------------------------------------

    def _build(self) -> paho.Client:
        protocol = paho.MQTTv5 if self.protocol == "5" else paho.MQTTv311
        client = paho.Client(
            CallbackAPIVersion.VERSION2,
            client_id=self.client_id,
            protocol=protocol,
            reconnect_on_failure=True,
        )
        client.enable_logger(PAHO_LOG)
        client.reconnect_delay_set(
            min_delay=self.options.reconnect_min_delay, max_delay=self.options.reconnect_max_delay
        )
        client.max_inflight_messages_set(self.options.max_inflight)
        if self.endpoint.username is not None:
            client.username_pw_set(self.endpoint.username, self.endpoint.password)
        if self.endpoint.tls:
            client.tls_set_context(self.options.tls.context())
            if self.options.tls.insecure:
                client.tls_insecure_set(True)
        if self.will is not None:
            client.will_set(
                self.will.topic, self.will.payload, qos=self.will.qos, retain=self.will.retain
            )
        client.on_connect = self._connected
        client.on_disconnect = self._disconnected
        client.on_message = self._message
        client.on_publish = self._published
        client.on_connect_fail = self._connect_failed
        return client

    def _connected(self, client, userdata, flags, reason: ReasonCode, properties) -> None:
        if reason.is_failure:
            self._refused(client, reason)
            return
        self.connected = True
        self._v5_unproven = False
        if self.last_error:
            log.info(
                "MQTT connected to %s (MQTT %s) after: %s",
                self.broker,
                self.protocol,
                self.last_error,
            )
        else:
            log.info("MQTT connected to %s (MQTT %s)", self.broker, self.protocol)
        self.last_error = None
        for topic_filter, qos in list(self._subscriptions.items()):
            client.subscribe(topic_filter, qos)
        self._on_connect()

    def _refused(self, client: paho.Client, reason: ReasonCode) -> None:
        code = reason.value
        # A broker that answered CONNACK speaks our protocol: the close that follows a refusal
        # is no sign of a 3.1.1-only broker.
        self._v5_unproven = False
        auto = self.options.protocol == "auto"
        if code in UNSUPPORTED_PROTOCOL and self.protocol == "5" and auto:
            self._fall_back(client, "refused MQTT 5")
            return
        if code in AUTH_FAILED:
            message = (
                f"MQTT broker {self.broker} refused the login of user "
                f"{self.endpoint.username!r}: {reason} (reason code {code}); "
                "check username/password in [stages.service.mqtt]"
            )
        else:
            message = f"MQTT broker {self.broker} refused the connection: {reason} (code {code})"
        self._report(message, code)

    def _fall_back(self, client: paho.Client, why: str) -> None:
        log.info("MQTT broker %s %s; falling back to MQTT 3.1.1", self.broker, why)
        self.protocol = "3.1.1"
        # paho's client cannot change protocol: rebuild it, off paho's own thread.
        threading.Thread(target=self._rebuild, args=(client,), daemon=True).start()

    def _rebuild(self, old: paho.Client) -> None:
        old.disconnect()
        old.loop_stop()
        if self._stopped:
            return
        self._on_rebuilt()
        self._connect()

    def _disconnected(self, client, userdata, flags, reason: ReasonCode, properties) -> None:
        was_connected = self.connected
        self.connected = False
        if self._v5_unproven and not was_connected and not self._stopped:
            # some 3.1.1-only brokers (amqtt) just close on an MQTT 5 CONNECT
            self._v5_unproven = False
            self._fall_back(client, "closed the connection before answering MQTT 5")
            return
        if was_connected:
            if self._stopped:
                log.info("MQTT disconnected from %s", self.broker)
            else:
                log.warning("MQTT lost %s (%s); reconnecting with backoff", self.broker, reason)
            self._on_disconnect()

    def _connect_failed(self, client, userdata) -> None:
        self._report(f"cannot connect to MQTT broker {self.broker}: {self._diagnose()}", None)

    def _report(self, message: str, code: int | None) -> None:
        if message != self.last_error:
            log.error("%s (will keep retrying)", message)
            self._on_error(message, code)
        self.last_error = message

    def _diagnose(self) -> str:
        """Why a TCP/TLS connect fails, found by trying it once more (paho hides it)."""
        try:
            with socket.create_connection((self.endpoint.host, self.endpoint.port), 5) as sock:
                if self.endpoint.tls:
                    ctx = self.options.tls.context()
                    with ctx.wrap_socket(sock, server_hostname=self.endpoint.host):
                        pass
        except OSError as exc:
            return str(exc) or type(exc).__name__
        return "connection failed (reachable now; retrying)"

    def _message(self, client, userdata, message: paho.MQTTMessage) -> None:
        try:
            self._on_message(message.topic, message.payload)
        except Exception:
            log.exception("MQTT message handler failed for %s", message.topic)

    def _published(self, client, userdata, mid: int, reason: ReasonCode, properties) -> None:
        self._on_publish(mid)


def rc_ok(rc: MQTTErrorCode) -> bool:
    return rc in (MQTTErrorCode.MQTT_ERR_SUCCESS, MQTTErrorCode.MQTT_ERR_NO_CONN)
