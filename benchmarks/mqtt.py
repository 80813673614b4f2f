"""MQTT publisher benchmark: events/s through the mqtt service and the latency it adds.

Runs a private mosquitto on 127.0.0.1 and compares, on the same broker and payloads:

* ``voiced mqtt service``: ``MqttService.voiced_event(event)`` (queue -> publisher thread ->
  paho, QoS 1, in-flight window), and
* ``raw paho loop`` (the peer): ``client.publish(topic, event.to_json(), qos=1)`` in a loop.

Throughput: N events as fast as the caller can emit them, timed until a subscriber has all.
Latency: events spaced out (not a backlog), emit -> subscriber receipt, in one process.

    python benchmarks/mqtt.py [--events 20000] [--latency-events 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import paho.mqtt.client as paho
from paho.mqtt.enums import CallbackAPIVersion
from voiced_plugins.mqtt import MqttOptions, MqttService

from voiced.events import Event, EventType

TOPIC = "voiced/bench/event/timer"


def start_mosquitto(folder: Path) -> tuple[subprocess.Popen, int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    conf = folder / "mosquitto.conf"
    user = "user root\n" if os.geteuid() == 0 else ""
    conf.write_text(
        f"{user}listener {port} 127.0.0.1\nallow_anonymous true\nmax_queued_messages 1000000\n"
    )
    proc = subprocess.Popen(
        ["mosquitto", "-c", str(conf)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    for _ in range(500):
        try:
            socket.create_connection(("127.0.0.1", port), 0.1).close()
            return proc, port
        except OSError:
            time.sleep(0.01)
    raise RuntimeError("mosquitto did not start")


class Subscriber:
    def __init__(self, port: int) -> None:
        self.received: dict[int, float] = {}
        self.sent: dict[int, float] = {}
        self.want = 0
        self.done = threading.Event()
        ready = threading.Event()
        self.client = paho.Client(CallbackAPIVersion.VERSION2, protocol=paho.MQTTv311)
        self.client.on_connect = lambda c, *a: c.subscribe(TOPIC, qos=1)
        self.client.on_subscribe = lambda *a: ready.set()
        self.client.on_message = self._message
        self.client.connect("127.0.0.1", port)
        self.client.loop_start()
        ready.wait(10)

    def reset(self, want: int) -> None:
        self.received, self.want = {}, want
        self.done.clear()

    def _message(self, client, userdata, message) -> None:
        now = time.perf_counter()
        seq = json.loads(message.payload)["data"]["seq"]
        self.received.setdefault(seq, now)
        if len(self.received) >= self.want:
            self.done.set()

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


def event(seq: int) -> Event:
    return Event(EventType.TIMER, "run", "bench", {"seq": seq, "padding": "x" * 200})


class ServicePublisher:
    name = "voiced mqtt service"

    def __init__(self, port: int, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.svc = MqttService(
            MqttOptions(
                host="127.0.0.1", port=port, site_id="bench", discovery=False, queue_size=1_000_000
            ),
            None,
        )
        loop.run_until_complete(self.svc.start())
        while not self.svc.stats()["connected"]:
            time.sleep(0.01)

    def send(self, e: Event) -> None:
        self.svc.voiced_event(e)

    def close(self) -> None:
        self.loop.run_until_complete(self.svc.stop())


class RawPahoPublisher:
    name = "raw paho loop (peer)"

    def __init__(self, port: int, loop: asyncio.AbstractEventLoop) -> None:
        self.client = paho.Client(CallbackAPIVersion.VERSION2, protocol=paho.MQTTv5)
        self.client.max_queued_messages_set(0)
        self.client.connect("127.0.0.1", port)
        self.client.loop_start()
        while not self.client.is_connected():
            time.sleep(0.01)

    def send(self, e: Event) -> None:
        self.client.publish(TOPIC, e.to_json(), qos=1)

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


def measure(publisher, sub: Subscriber, n: int, n_latency: int, spacing: float) -> dict:
    sub.reset(n)
    call_times = []
    start = time.perf_counter()
    for seq in range(n):
        t0 = time.perf_counter()
        publisher.send(event(seq))
        call_times.append(time.perf_counter() - t0)
    if not sub.done.wait(120):
        raise RuntimeError(f"{publisher.name}: only {len(sub.received)}/{n} arrived")
    elapsed = time.perf_counter() - start
    sub.reset(n_latency)
    sent: dict[int, float] = {}
    for seq in range(n_latency):
        sent[seq] = time.perf_counter()
        publisher.send(event(seq))
        time.sleep(spacing)
    if not sub.done.wait(60):
        raise RuntimeError(f"{publisher.name}: latency run incomplete")
    lat = sorted((sub.received[s] - sent[s]) * 1000 for s in sent)
    return {
        "events/s": n / elapsed,
        "call us": statistics.mean(call_times) * 1e6,
        "p50 ms": lat[len(lat) // 2],
        "p95 ms": lat[int(len(lat) * 0.95)],
        "p99 ms": lat[int(len(lat) * 0.99)],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20000)
    parser.add_argument("--latency-events", type=int, default=2000)
    parser.add_argument("--spacing-ms", type=float, default=2.0)
    args = parser.parse_args()
    if shutil.which("mosquitto") is None:
        raise SystemExit("mosquitto is needed (apt-get install mosquitto)")
    loop = asyncio.new_event_loop()
    with tempfile.TemporaryDirectory() as tmp:
        proc, port = start_mosquitto(Path(tmp))
        sub = Subscriber(port)
        rows = []
        try:
            for cls in (ServicePublisher, RawPahoPublisher):
                publisher = cls(port, loop)
                try:
                    rows.append(
                        (
                            publisher.name,
                            measure(
                                publisher,
                                sub,
                                args.events,
                                args.latency_events,
                                args.spacing_ms / 1000,
                            ),
                        )
                    )
                finally:
                    publisher.close()
        finally:
            sub.close()
            proc.terminate()
            proc.wait()
    cols = ["events/s", "call us", "p50 ms", "p95 ms", "p99 ms"]
    print(
        f"mosquitto on 127.0.0.1, QoS 1, {args.events} events for throughput, "
        f"{args.latency_events} spaced {args.spacing_ms} ms for latency; payload ~300 B"
    )
    print(f"{'publisher':<24}" + "".join(f"{c:>12}" for c in cols))
    for name, row in rows:
        print(
            f"{name:<24}"
            + "".join(
                f"{row[c]:>12.1f}" if c == "events/s" or c == "call us" else f"{row[c]:>12.2f}"
                for c in cols
            )
        )
    print("call us: time the emitting thread spends per event (the daemon loop for voiced)")


if __name__ == "__main__":
    main()
