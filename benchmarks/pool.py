"""The ASR worker pool: N sites talking at once against W ``voiced worker`` processes behind a
real mosquitto, and the cost model for sizing a house.

Measured: per (W, N), every site sends one utterance at the same moment (the worst case), a
few rounds; latency from publish to answer, as a ratio to the in-process engine's cost on
the same utterances (measured in the same run) and to one site. On one small machine the
workers share its cores, so the measured rows show the pool's overhead and correctness more
than its scaling; the cost model shows the scaling you get when each worker has its own cores:

- burst: N utterances at once on W workers, each costing ``c`` s: the last waits
  ``(ceil(N / W) - 1) * c``; the largest N with that under 500 ms is what W sustains.
- random arrivals: each site speaks one command every ``period`` s on average (Poisson),
  W servers with deterministic cost ``c``; the p95 waiting time, simulated (seeded).

    python -m benchmarks.concurrency --pool [--sites 1,2,4,8] [--workers 1,2,3] [--rounds 2]
"""

from __future__ import annotations

import heapq
import math
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from benchmarks.common import Row, Section, ensure_importable, stats

BUDGET_S = 0.5  # added latency a house accepts before an answer feels slow
USER, PASSWORD = "voiced", "bench"


# -- the cost model (pure) ------------------------------------------------------------------


def burst_added_latency(sites: int, workers: int, cost: float) -> float:
    """Worst added wait when ``sites`` utterances arrive at once on ``workers`` workers."""
    return (math.ceil(sites / workers) - 1) * cost


def burst_capacity(workers: int, cost: float, budget: float = BUDGET_S) -> int:
    """The most sites talking at once whose last answer waits less than ``budget``."""
    if cost <= 0:
        raise ValueError("cost must be positive")
    rounds = math.ceil(budget / cost)  # rounds r with (r - 1) * cost < budget
    return workers * rounds


def simulated_p95_wait(
    sites: int, workers: int, cost: float, period: float, commands: int = 4000, seed: int = 1
) -> float:
    """p95 queueing wait with Poisson arrivals (rate sites/period) on ``workers`` servers."""
    rng = random.Random(seed)
    free_at = [0.0] * workers
    heapq.heapify(free_at)
    t, waits = 0.0, []
    rate = sites / period
    for _ in range(commands):
        t += rng.expovariate(rate)
        start = max(t, heapq.heappop(free_at))
        waits.append(start - t)
        heapq.heappush(free_at, start + cost)
    waits.sort()
    return waits[int(0.95 * (len(waits) - 1))]


def random_capacity(
    workers: int, cost: float, period: float, budget: float = BUDGET_S, limit: int = 4096
) -> int:
    """The most sites whose simulated p95 wait stays under ``budget``."""
    best = 0
    for sites in range(1, limit + 1):
        if sites * cost / period >= workers:  # utilisation >= 1: the queue grows forever
            break
        if simulated_p95_wait(sites, workers, cost, period) >= budget:
            break
        best = sites
    return best


# -- the measured pool ----------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Broker:
    """mosquitto on 127.0.0.1 with a password login (the pool refuses anonymous brokers)."""

    def __init__(self, folder: Path) -> None:
        if shutil.which("mosquitto") is None:
            raise RuntimeError("mosquitto not installed (apt-get install mosquitto)")
        self.port = free_port()
        passwd = folder / "passwd"
        subprocess.run(
            ["mosquitto_passwd", "-b", "-c", str(passwd), USER, PASSWORD],
            check=True,
            capture_output=True,
        )
        passwd.chmod(0o600)
        conf = folder / "mosquitto.conf"
        run_as = "user root\n" if os.geteuid() == 0 else ""
        conf.write_text(
            f"{run_as}listener {self.port} 127.0.0.1\nallow_anonymous false\n"
            f"password_file {passwd}\nmax_queued_messages 100000\n"
        )
        self.process = subprocess.Popen(
            ["mosquitto", "-c", str(conf)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + 10
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), 0.2):
                    return
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def pool_options(self) -> dict[str, Any]:
        return {
            "timeout": 60.0,
            "broker": {"host": "127.0.0.1", "port": self.port, "username": USER,
                       "password": PASSWORD},
        }  # fmt: skip

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(10)


def start_workers(folder: Path, broker: Broker, count: int) -> list[subprocess.Popen]:
    config = folder / "pool.toml"
    config.write_text(
        '[pipeline]\nsource = []\nasr = ["mqtt-pool", "whisper-ctranslate2"]\n'
        "[stages.asr.mqtt-pool]\ntimeout = 60.0\n"
        f'[stages.asr.mqtt-pool.broker]\nhost = "127.0.0.1"\nport = {broker.port}\n'
        f'username = "{USER}"\npassword = "{PASSWORD}"\n'
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("VOICED_")}
    env["VOICED_LOG_LEVEL"] = "WARNING"
    return [
        subprocess.Popen(
            [sys.executable, "-m", "voiced.cli", "--config", str(config), "worker", "--id",
             f"bench{i}"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        for i in range(count)
    ]  # fmt: skip


def measure_level(
    front: Any, utterances: list[bytes], sites: int, rounds: int
) -> list[tuple[int, float]]:
    """(utterance index, latency s) for ``rounds`` rounds of ``sites`` utterances sent at the
    same moment."""
    latencies: list[tuple[int, float]] = []

    def one(index: int) -> tuple[int, float]:
        started = time.perf_counter()
        front.transcribe(utterances[index])
        return index, time.perf_counter() - started

    with ThreadPoolExecutor(sites) as pool:
        for r in range(rounds):
            batch = [(r * sites + i) % len(utterances) for i in range(sites)]
            latencies.extend(pool.map(one, batch))
    return latencies


def _in_process_costs(utterances: list[bytes]) -> list[float]:
    """Seconds of each in-process tiny.en transcription, three passes over the utterances."""
    from voiced_plugins.asr_whisper.ct2 import WhisperCt2Asr, WhisperCt2Options

    local = WhisperCt2Asr(WhisperCt2Options(), None)
    local.load()
    per_utterance: list[list[float]] = [[] for _ in utterances]
    for _ in range(3):
        for index, audio in enumerate(utterances):
            started = time.perf_counter()
            local.transcribe(audio)
            per_utterance[index].append(time.perf_counter() - started)
    local.close()
    return [t for times in per_utterance for t in times]


def _measure_workers(
    section: Section,
    folder: Path,
    broker: Broker,
    w: int,
    utterances: list[bytes],
    sites: list[int],
    rounds: int,
    c: float,
) -> list[dict[str, Any]]:
    """Start ``w`` workers and a front end, time each site level (rows and a note into
    ``section``); the latencies measured. The workers are stopped after."""
    from voiced_plugins.asr_pool.frontend import MqttPoolAsr
    from voiced_plugins.asr_pool.options import PoolOptions

    measured: list[dict[str, Any]] = []
    procs = start_workers(folder, broker, w)
    options = PoolOptions.model_validate({**broker.pool_options(), "client_id": f"bench-front-{w}"})
    front = MqttPoolAsr(options, None)
    front.load()
    try:
        deadline = time.monotonic() + 180
        while len(front.online_workers()) < w:
            if time.monotonic() > deadline:
                raise RuntimeError(f"only {front.online_workers()} came online")
            time.sleep(0.2)
        measure_level(front, utterances, 1, 1)  # warm-up
        single: float | None = None
        for n in sites:
            pairs = measure_level(front, utterances, n, rounds)
            lat = [x for _, x in pairs]
            summary = stats(lat)
            single = single or summary["median"]
            measured.append({"workers": w, "sites": n, "latency_s": lat})
            section.rows.append(
                Row.of(
                    "pool",
                    f"W={w} workers, N={n} sites at once: publish -> answer",
                    "ms",
                    summary,
                    peer=f"{summary['median'] / c:.2f}x in-process, "
                    f"{summary['median'] / single:.2f}x N={sites[0]}",
                )
            )
            print(f"  pool W={w} N={n}: median {summary['median']:.3f} s", file=sys.stderr)
        dropped = front.stats.duplicates_dropped + front.stats.late_dropped
        section.notes.append(
            f"W={w}: {front.stats.answered}/{front.stats.jobs} answered, "
            f"{dropped} duplicate/late answers dropped, {front.stats.resent} resent"
        )
    finally:
        front.close()
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(30)
    return measured


def _model_rows(c: float, period: float) -> list[Row]:
    """The capacity model's rows for 1-8 workers: burst and Poisson arrivals."""
    rows = []
    for w in (1, 2, 3, 4, 8):
        rows.append(
            Row(
                "pool-model",
                f"W={w} workers (own cores): sites talking at once within {BUDGET_S * 1000:.0f} ms",
                "sites",
                burst_capacity(w, c),
                note=f"burst, c = {c * 1000:.0f} ms per utterance",
            )
        )
        rows.append(
            Row(
                "pool-model",
                f"W={w} workers: sites at one command per {period:.0f} s each, p95 wait < "
                f"{BUDGET_S * 1000:.0f} ms",
                "sites",
                random_capacity(w, c, period),
                note="Poisson arrivals, simulated (seeded)",
            )
        )
    return rows


def run_pool(
    sites: list[int], workers: list[int], rounds: int, commands: int, period: float
) -> Section:
    """The pool section: the in-process cost (the peer), the pool measured at each worker
    count and site level, and the capacity model's rows."""
    ensure_importable()
    from benchmarks import testset
    from voiced.audio import read_pipeline_audio

    manifest = testset.build(testset.DEFAULT_DIR)
    items = [i for i in manifest["items"] if i.get("intent")][:commands]
    utterances = [read_pipeline_audio(testset.DEFAULT_DIR / i["file"]) for i in items]

    costs = _in_process_costs(utterances)
    cost = stats(costs)
    c = cost["median"]

    section = Section("pool")
    section.rows.append(
        Row.of("pool", "in-process tiny.en cost per utterance (the peer)", "ms", cost)
    )
    measured: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="voiced-pool-") as tmp:
        folder = Path(tmp)
        broker = Broker(folder)
        try:
            for w in workers:
                measured += _measure_workers(
                    section, folder, broker, w, utterances, sites, rounds, c
                )
        finally:
            broker.stop()

    section.rows += _model_rows(c, period)
    section.results = {"cost_s": costs, "measured": measured, "period_s": period}
    section.notes.append(
        f"{len(utterances)} test-set commands; {rounds} rounds per level; workers share this "
        f"machine's {os.cpu_count()} cores with the front end and the broker"
    )
    return section
