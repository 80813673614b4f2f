"""An embedded amqtt broker on 127.0.0.1, so a fresh install works without one."""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)


class PortBusy(RuntimeError):
    """The embedded broker's port is taken (often by a broker already running)."""


class EmbeddedBroker:
    """amqtt on the daemon's event loop; MQTT 3.1.1 only, anonymous, localhost only."""

    host = "127.0.0.1"

    def __init__(self, port: int = 1883) -> None:
        self.port = port
        self._broker = None

    async def start(self) -> None:
        from amqtt.broker import Broker
        from amqtt.errors import BrokerError

        config = {
            "listeners": {"default": {"type": "tcp", "bind": f"{self.host}:{self.port}"}},
            "plugins": {
                "amqtt.plugins.authentication.AnonymousAuthPlugin": {"allow_anonymous": True}
            },
        }
        broker = Broker(config)
        try:
            await broker.start()
        except BrokerError as exc:
            if "in use" in str(exc) or "Errno 98" in str(exc):
                raise PortBusy(
                    f"embedded MQTT broker: {self.host}:{self.port} is already in use "
                    "(another broker?); set [stages.service.mqtt] host/url to use that broker, "
                    "or embedded_port to another port"
                ) from None
            raise RuntimeError(f"embedded MQTT broker failed to start: {exc}") from None
        self._broker = broker
        log.info("embedded MQTT broker (amqtt) listening on %s:%d", self.host, self.port)

    async def stop(self) -> None:
        if self._broker is not None:
            broker, self._broker = self._broker, None
            await broker.shutdown()
