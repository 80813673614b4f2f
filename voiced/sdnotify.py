"""systemd's notify protocol: one datagram to $NOTIFY_SOCKET; a no-op when it is unset."""

from __future__ import annotations

import os
import socket
import time


class Notifier:
    """Sends READY=1, STATUS=..., WATCHDOG=1, STOPPING=1 to the service manager."""

    def __init__(self, address: str | None = None) -> None:
        self.address = address if address is not None else os.environ.get("NOTIFY_SOCKET", "")
        if self.address.startswith("@"):  # abstract namespace socket
            self.address = "\0" + self.address[1:]

    @property
    def enabled(self) -> bool:
        return bool(self.address)

    def notify(self, *fields: str) -> bool:
        if not self.enabled:
            return False
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
            try:
                sock.sendto("\n".join(fields).encode(), self.address)
            except OSError:
                return False
        return True

    def ready(self, status: str = "") -> bool:
        return self.notify("READY=1", *([f"STATUS={status}"] if status else []))

    def status(self, text: str) -> bool:
        return self.notify(f"STATUS={text}")

    def watchdog(self) -> bool:
        return self.notify("WATCHDOG=1")

    def stopping(self) -> bool:
        return self.notify("STOPPING=1")

    def reloading(self) -> bool:
        # MONOTONIC_USEC lets newer systemd (253+) match the reload; older ones ignore it.
        now_usec = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
        return self.notify("RELOADING=1", f"MONOTONIC_USEC={now_usec}")


def watchdog_interval() -> float | None:
    """Seconds between WATCHDOG=1 pings (half of WatchdogSec), or None when not watched."""
    usec = os.environ.get("WATCHDOG_USEC")
    pid = os.environ.get("WATCHDOG_PID")
    if not usec or (pid and pid != str(os.getpid())):
        return None
    try:
        return int(usec) / 1_000_000 / 2
    except ValueError:
        return None
