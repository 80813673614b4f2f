"""The pool's broker connection: voiced's ``MqttClient`` with what the pool needs on top.

A persistent MQTT 5 session (``clean_start`` false and a session expiry), so the broker keeps
unacknowledged jobs and replies across a drop or a broker restart; manual acknowledgement, so
a worker acks a job only after its answer is out (a worker killed mid-utterance leaves the job
unacked); ``Receive Maximum`` so the broker sends a worker one job at a time; and ``Maximum
Packet Size`` so the broker never sends either side a message larger than it takes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import paho.mqtt.client as paho
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from voiced_plugins.mqtt.client import MqttClient
from voiced_plugins.mqtt.options import MqttOptions

log = logging.getLogger(__name__)


class PoolConnection(MqttClient):
    def __init__(
        self,
        options: MqttOptions,
        *,
        session_expiry: int,
        receive_maximum: int | None = None,
        max_packet_bytes: int | None = None,
        manual_ack: bool = False,
        on_job_message: Callable[[paho.MQTTMessage], None] = lambda message: None,
        **kwargs: Any,
    ) -> None:
        super().__init__(options, **kwargs)
        self.session_expiry = session_expiry
        self.receive_maximum = receive_maximum
        self.max_packet_bytes = max_packet_bytes
        self.manual_ack = manual_ack
        self._on_job_message = on_job_message

    def start(self) -> None:
        """Connect in the background with the persistent session; a started one stays as it is
        (a second paho client with the same id would take the session over, back and forth)."""
        if self._client is not None and not self._stopped:
            return
        self._stopped = False
        self._client = self._build()
        props = Properties(PacketTypes.CONNECT)
        props.SessionExpiryInterval = self.session_expiry
        if self.receive_maximum:
            props.ReceiveMaximum = self.receive_maximum
        if self.max_packet_bytes:  # the broker drops a larger message instead of sending it
            props.MaximumPacketSize = self.max_packet_bytes
        self._client.connect_async(
            self.endpoint.host,
            self.endpoint.port,
            keepalive=self.options.keepalive,
            clean_start=False,
            properties=props,
        )
        self._client.loop_start()

    def ack(self, mid: int) -> None:
        """Acknowledge a QoS 1 job once its answer is published."""
        if self._client is not None and self.manual_ack:
            self._client.ack(mid, 1)

    def _build(self) -> paho.Client:
        client = super()._build()
        client.manual_ack_set(self.manual_ack)
        return client

    def _message(self, client, userdata, message: paho.MQTTMessage) -> None:
        try:
            self._on_job_message(message)
        except Exception:
            log.exception("ASR pool: handling a message on %s failed", message.topic)
