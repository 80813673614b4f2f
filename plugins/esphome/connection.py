"""One client (Home Assistant) connected to a voiced ESPHome device: handshake, pings,
entities, and the voice-assistant messages handed to the device."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING, Any

from aioesphomeapi import api_pb2 as api
from google.protobuf.message import Message

from voiced import __version__

from .entities import entity_list, entity_states
from .frames import FrameError, FrameReader
from .noise_frames import NoiseFrames

if TYPE_CHECKING:
    from .device import Device

log = logging.getLogger(__name__)

API_VERSION = (1, 10)
MAX_WRITE_BUFFER = 4 << 20  # a client that stops reading is dropped, not buffered for
IGNORED = (
    api.SubscribeLogsRequest,
    api.SubscribeHomeassistantServicesRequest,
    api.SubscribeHomeAssistantStatesRequest,
    api.GetTimeResponse,
    api.VoiceAssistantAudio,  # TTS streamed to a device with a speaker feature: not asked for
)


class Connection:
    """Reads frames until the client leaves, answers the protocol's own requests and passes
    the voice assistant's to the device."""

    def __init__(
        self, device: Device, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self.device = device
        self.writer = writer
        options = device.options
        key = device.config.key()
        self.frames: FrameReader | NoiseFrames = (
            NoiseFrames(reader, writer, key, options.max_frame_bytes, options.read_seconds)
            if key is not None
            else FrameReader(reader, options.max_frame_bytes, options.read_seconds)
        )
        self.idle_seconds = options.idle_seconds
        self.peer = _peer(writer)
        self.voice_subscribed = False
        self.closed = False

    async def serve(self) -> None:
        try:
            async with asyncio.timeout(self.idle_seconds):
                await self.frames.handshake(self.device.name, self.device.config.mac_address())
            while not self.closed:
                async with asyncio.timeout(self.idle_seconds):
                    message = await self.frames.read()
                if message is None:
                    break
                self.handle(message)
        except FrameError as exc:
            log.warning("esphome %s: %s: %s; dropped", self.device.name, self.peer, exc)
            self.device.refused += 1
            self.send(api.DisconnectRequest())
        except TimeoutError:
            log.info(
                "esphome %s: %s sent nothing for %g s; closed",
                self.device.name,
                self.peer,
                self.idle_seconds,
            )
        except (asyncio.IncompleteReadError, EOFError, ConnectionError, OSError):
            pass
        except Exception:  # a bug must cost this client, not the device
            log.exception("esphome %s: %s: failed; dropped", self.device.name, self.peer)
        finally:
            self.close()

    def send(self, *messages: Message) -> None:
        """Queue messages to the client; one that stopped reading is dropped."""
        if self.closed or self.writer.is_closing() or not self.frames.ready:
            return
        self.writer.write(self.frames.encode(*messages))
        if self.writer.transport.get_write_buffer_size() > MAX_WRITE_BUFFER:
            log.warning("esphome %s: %s does not read; dropped", self.device.name, self.peer)
            self.close()

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self.device.forget(self)
        with contextlib.suppress(RuntimeError, OSError):
            self.writer.close()

    # -- messages --------------------------------------------------------------------------

    def handle(self, message: Message) -> None:
        handler = _HANDLERS.get(type(message))
        if handler is not None:
            handler(self, message)
        elif isinstance(message, IGNORED):
            return
        else:
            self.device.on_message(self, message)

    def _hello(self, message: Any) -> None:
        log.info(
            "esphome %s: %s connected (%s)", self.device.name, self.peer, message.client_info[:64]
        )
        self.send(
            api.HelloResponse(
                api_version_major=API_VERSION[0],
                api_version_minor=API_VERSION[1],
                server_info=f"voiced {__version__}",
                name=self.device.name,
            )
        )

    def _authenticate(self, message: Any) -> None:
        self.send(api.AuthenticationResponse(invalid_password=False))

    def _disconnect(self, message: Any) -> None:
        self.send(api.DisconnectResponse())
        self.close()

    def _ping(self, message: Any) -> None:
        self.send(api.PingResponse())

    def _device_info(self, message: Any) -> None:
        self.send(self.device.device_info())

    def _list_entities(self, message: Any) -> None:
        self.send(*entity_list(), api.ListEntitiesDoneResponse())

    def _subscribe_states(self, message: Any) -> None:
        self.send(*entity_states(self.device.state))

    def _subscribe_voice(self, message: Any) -> None:
        self.voice_subscribed = bool(message.subscribe)


_HANDLERS: dict[type[Message], Any] = {
    api.HelloRequest: Connection._hello,
    api.AuthenticationRequest: Connection._authenticate,
    api.DisconnectRequest: Connection._disconnect,
    api.DisconnectResponse: lambda connection, message: connection.close(),
    api.PingRequest: Connection._ping,
    api.PingResponse: lambda connection, message: None,
    api.DeviceInfoRequest: Connection._device_info,
    api.ListEntitiesRequest: Connection._list_entities,
    api.SubscribeStatesRequest: Connection._subscribe_states,
    api.SubscribeVoiceAssistantRequest: Connection._subscribe_voice,
}


def _peer(writer: asyncio.StreamWriter) -> str:
    peer = writer.get_extra_info("peername")
    if isinstance(peer, tuple) and len(peer) >= 2:
        return f"{peer[0]}:{peer[1]}"
    return "?"
