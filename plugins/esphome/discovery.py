"""Announcing the devices over mDNS as ESPHome devices do (``_esphomelib._tcp``), so Home
Assistant's zeroconf discovery offers them; only on the interface the devices listen on."""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import socket
from typing import TYPE_CHECKING

from voiced import __version__

if TYPE_CHECKING:
    from zeroconf.asyncio import AsyncZeroconf

    from .device import Device

log = logging.getLogger(__name__)

SERVICE_TYPE = "_esphomelib._tcp.local."
NOISE = "Noise_NNpsk0_25519_ChaChaPoly_SHA256"
NAME_CHECK_MS = 2000
"""How long a device's name is asked for over multicast before it is claimed: a responder
that holds it answers within about 1.2 s (RFC 6762's one-second hold on a record it sent
in the last second, plus its random 20-120 ms delay)."""


def addresses_for(host: str) -> list[str]:
    """The IPv4 addresses to announce: the host itself, or every non-loopback one of this
    machine when the devices listen on all interfaces."""
    if host == "localhost":
        return ["127.0.0.1"]
    if host not in ("0.0.0.0", "::", ""):
        return [host]
    import ifaddr

    found = []
    for adapter in ifaddr.get_adapters():
        for ip in adapter.ips:
            if isinstance(ip.ip, str) and not ipaddress.ip_address(ip.ip).is_loopback:
                found.append(ip.ip)
    return found


def service_info(device: Device, addresses: list[str]) -> object:
    from zeroconf import ServiceInfo

    name = device.name
    properties = {
        "friendly_name": device.config.friendly_name or f"voiced {device.site_id}",
        "version": "2025.4.0",
        "mac": device.config.mac_address().replace(":", "").lower(),
        "platform": "host",
        "board": "voiced",
        "network": "ethernet",
        "project_name": "voiced.voiced",
        "project_version": __version__,
    }
    if device.config.encryption_key is not None:
        properties["api_encryption"] = NOISE
    assert device.address is not None
    return ServiceInfo(
        SERVICE_TYPE,
        f"{name}.{SERVICE_TYPE}",
        addresses=[socket.inet_aton(a) for a in addresses],
        port=device.address[1],
        properties=properties,
        server=f"{name}.local.",
    )


class Announcer:
    """Registers every device's service while the daemon runs; a failure is logged, not
    fatal (the devices can still be added by host and port)."""

    def __init__(self, host: str) -> None:
        self.host = host
        self.zeroconf: AsyncZeroconf | None = None
        self.services: list[object] = []

    async def start(self, devices: list[Device]) -> None:
        from zeroconf import IPVersion
        from zeroconf.asyncio import AsyncZeroconf

        addresses = addresses_for(self.host)
        try:
            self.zeroconf = AsyncZeroconf(interfaces=addresses, ip_version=IPVersion.V4Only)
            infos = [service_info(device, addresses) for device in devices]
            taken = await asyncio.gather(*(self._taken(info) for info in infos))
            for device, info, held in zip(devices, infos, taken, strict=True):
                await self._register(device, info, held)
        except (OSError, ValueError) as exc:
            log.warning(
                "esphome: cannot announce the devices over mDNS on %s: %s; add them "
                "in Home Assistant by host and port",
                ", ".join(addresses),
                exc,
            )
            return
        log.info(
            "esphome: %d device(s) announced over mDNS on %s",
            len(self.services),
            ", ".join(addresses),
        )

    async def _taken(self, info: object) -> bool:
        """Whether another responder answers for ``info``'s name, asked over multicast.
        zeroconf's own probe asks with the unicast-response bit, and a second responder on the
        same host shares port 5353 with the first: the kernel may hand the unicast answer to
        either's socket, so the probe alone can miss a twin on this machine."""
        from zeroconf import DNSQuestionType
        from zeroconf.asyncio import AsyncServiceInfo

        assert self.zeroconf is not None
        asked = AsyncServiceInfo(SERVICE_TYPE, info.name)  # type: ignore[attr-defined]
        zc = self.zeroconf.zeroconf
        return await asked.async_request(zc, NAME_CHECK_MS, question_type=DNSQuestionType.QM)

    async def _register(self, device: Device, info: object, taken: bool) -> None:
        from zeroconf import NonUniqueNameException

        assert self.zeroconf is not None
        if not taken:
            try:
                await self.zeroconf.async_register_service(info)  # type: ignore[arg-type]
            except NonUniqueNameException:
                pass
            else:
                self.services.append(info)
                return
        log.warning(
            "esphome: another device on the network already announces %r over mDNS (a "
            "second voiced with the same names?); %s is not announced: give it its own "
            "`name`, or add it in Home Assistant by host and port",
            device.name,
            device.name,
        )

    async def stop(self) -> None:
        if self.zeroconf is None:
            return
        for info in self.services:
            await self.zeroconf.async_unregister_service(info)  # type: ignore[arg-type]
        await self.zeroconf.async_close()
        self.zeroconf = None
