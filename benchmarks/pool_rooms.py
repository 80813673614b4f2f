"""Rooms speaking at once through the ASR worker pool, set up as docs/scaleout.md says.

Every round, ``--rooms`` utterances end at the same moment (the worst case) and go to the
ASR chain ``["mqtt-pool", "whisper-ctranslate2"]`` from as many threads (``pipeline.
asr_workers`` = the rooms, at least the workers, as documented); the front end has the home
(hassil on config/home.yaml) and sends it to the workers. Rows: end of speech -> transcript
(median, p90) with 0 workers (the local engine alone), 1, 2 and 3 ``voiced worker``
processes, then 3 with one SIGKILLed mid-load; per row the answers the pool lost (the local
engine answered instead, or nobody) and doubled (two results for one job), the most jobs sent
at once and the most being transcribed at once (from the workers' claims and results), and
the cost model's prediction for this machine's cores beside the measured figure.

The cost model (``shared_cores_burst``): each utterance, measured in-process first, is ``c1``
s of one core's work (the engine on one thread); alone on the machine the engine does it in
``c`` s (its threads: speed-up ``s = c1 / c``, at most the cores ``K``). Jobs go round the
workers; each worker does one at a time; ``m`` jobs in progress at once each run at ``min(s,
K / m)`` cores. The local engine is one worker. The model gets the same bursts as the rows.

    python -m benchmarks.pool_rooms [--rooms 4] [--rounds 5] [--workers 0,1,2,3] [--kill 3]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from benchmarks.common import Row, Section, ensure_importable, stats
from benchmarks.pool import PASSWORD, USER, Broker, start_workers


def shared_cores_burst(jobs: list[tuple[float, float]], workers: int, cores: int) -> list[float]:
    """Finish times (s) of ``jobs`` (each ``(c, c1)``) arriving at once on ``workers`` workers
    that share ``cores`` cores (see the module's docstring)."""
    queues = [list(range(w, len(jobs), workers)) for w in range(workers)]
    left = {w: jobs[q[0]][1] for w, q in enumerate(queues) if q}  # worker -> core-seconds
    now, done = 0.0, []
    while left:
        speed = {w: min(jobs[queues[w][0]][1] / jobs[queues[w][0]][0], cores / len(left),
                        cores) for w in left}  # fmt: skip
        step = min(left[w] / speed[w] for w in left)
        now += step
        for w in list(left):
            left[w] -= step * speed[w]
            if left[w] <= 1e-9:
                done.append(now)
                queues[w].pop(0)
                del left[w]
                if queues[w]:
                    left[w] = jobs[queues[w][0]][1]
    return sorted(done)


def predicted(
    batches: list[list[tuple[float, float]]], workers: int, cores: int
) -> dict[str, float]:
    """The model's median and p90 over the bursts, as the measured rows are summed."""
    finish = [t for batch in batches for t in shared_cores_burst(batch, max(1, workers), cores)]
    summary = stats(finish)
    return {"median": summary["median"], "p90": summary["p90"] or summary["max"]}


def batches(count: int, rooms: int, rounds: int) -> list[list[int]]:
    """The utterances each round's rooms say (the same in every row)."""
    return [[(r * rooms + i) % count for i in range(rooms)] for r in range(rounds)]


class Replies:
    """Every reply on the pool's reply topics, with when it came: claims and results."""

    def __init__(self, port: int, prefix: str = "voiced/asr-pool") -> None:
        import paho.mqtt.client as paho
        from paho.mqtt.enums import CallbackAPIVersion

        self.seen: list[tuple[float, dict[str, Any]]] = []
        self.lock = threading.Lock()
        self.client = paho.Client(CallbackAPIVersion.VERSION2, protocol=paho.MQTTv5)
        self.client.username_pw_set(USER, PASSWORD)
        self.client.on_message = self._message
        self.client.connect("127.0.0.1", port)
        self.client.subscribe(f"{prefix}/reply/#", 1)
        self.client.loop_start()

    def _message(self, client: Any, userdata: Any, message: Any) -> None:
        with self.lock:
            self.seen.append((time.monotonic(), json.loads(message.payload)))

    def clear(self) -> None:
        with self.lock:
            self.seen.clear()

    def first_claim(self, since: float) -> str | None:
        """The worker of the first claim after ``since`` (None: none yet)."""
        with self.lock:
            return next((r["worker"] for t, r in self.seen if t > since and r["type"] == "claim"),
                        None)  # fmt: skip

    def counts(self) -> dict[str, int]:
        """Most jobs claimed and not yet answered at once; jobs with two or more results."""
        with self.lock:
            seen = list(self.seen)
        results: dict[str, int] = {}
        open_jobs: set[str] = set()
        most = 0
        for _, reply in sorted(seen, key=lambda x: x[0]):
            if reply["type"] == "claim":
                open_jobs.add(reply["id"])
                most = max(most, len(open_jobs))
            elif reply["type"] == "result":
                open_jobs.discard(reply["id"])
                results[reply["id"]] = results.get(reply["id"], 0) + 1
        return {"worked_at_once": most, "doubled": sum(n > 1 for n in results.values())}

    def close(self) -> None:
        self.client.loop_stop()
        self.client.disconnect()


def burst(chain: Any, audio: list[bytes], run: str) -> list[tuple[float, str, Any]]:
    """The rooms' utterances handed to the chain at the same moment: (seconds, engine, the
    transcript or the exception) per room."""
    start = threading.Barrier(len(audio))

    def room(index: int) -> tuple[float, str, Any]:
        start.wait()
        started = time.perf_counter()
        try:
            engine, transcript = chain.call(
                "transcribe", audio[index], "en", run_id=f"{run}-{index}", site_id=f"room{index}"
            )
        except Exception as exc:
            return time.perf_counter() - started, "-", exc
        return time.perf_counter() - started, engine, transcript

    with ThreadPoolExecutor(len(audio)) as rooms:
        return list(rooms.map(room, range(len(audio))))


def measure(
    chain: Any, utterances: list[bytes], rooms: int, rounds: int, label: str, kill: Any = None
) -> dict[str, Any]:
    latencies: list[float] = []
    by_engine: dict[str, int] = {}
    failed = 0
    for r, said in enumerate(batches(len(utterances), rooms, rounds)):
        batch = [utterances[i] for i in said]
        killer = None
        if kill is not None and r == 1:
            killer = threading.Thread(target=kill, daemon=True)
            killer.start()
        for seconds, engine, text in burst(chain, batch, f"{label}-{r}"):
            latencies.append(seconds)
            by_engine[engine] = by_engine.get(engine, 0) + 1
            failed += isinstance(text, Exception)
        if killer is not None:
            killer.join(30)
        time.sleep(0.3)
    return {"latency_s": latencies, "by_engine": by_engine, "failed": failed}


def pool_chain(broker: Broker, app: Any, local: Any, workers: int) -> tuple[Any, Any]:
    from voiced_plugins.asr_pool.frontend import MqttPoolAsr
    from voiced_plugins.asr_pool.options import PoolOptions

    from voiced.chain import EngineChain

    options = PoolOptions.model_validate(
        {**broker.pool_options(), "timeout": 30.0, "client_id": f"rooms-front-{workers}"}
    )
    front = MqttPoolAsr(options, app)
    front.load()
    chain = EngineChain(
        "asr", [("mqtt-pool", front), ("whisper-ctranslate2", local)], lambda e: None
    )
    chain.loaded = list(chain.engines)  # both loaded already
    return front, chain


def wait_ready(front: Any, chain: Any, workers: int, utterance: bytes) -> None:
    """Until every worker is online and has answered with the home built."""
    deadline = time.monotonic() + 240
    while len(front.online_workers()) < workers:
        if time.monotonic() > deadline:
            raise RuntimeError(f"only {front.online_workers()} came online")
        time.sleep(0.2)
    ready: set[str] = set()
    while len(ready) < workers:
        if time.monotonic() > deadline:
            raise RuntimeError(f"the home is built on {sorted(ready)} only")
        for _, engine, transcript in burst(chain, [utterance] * workers, f"warm-{time.time()}"):
            if engine == "mqtt-pool" and transcript.data["home"]["status"] == "used":
                ready.add(transcript.data["worker"])
        time.sleep(0.5)


def run(rooms: int, rounds: int, workers: list[int], kill: int | None) -> Section:
    ensure_importable()
    from voiced_plugins.asr_whisper.ct2 import WhisperCt2Asr, WhisperCt2Options
    from voiced_plugins.intent_hassil import HassilIntent, HassilOptions

    from benchmarks import testset
    from benchmarks.recognition import App
    from voiced.audio import read_pipeline_audio
    from voiced.chain import EngineChain

    manifest = testset.build(testset.DEFAULT_DIR)
    items = [i for i in manifest["items"] if i.get("intent")][: rooms * 3]
    utterances = [read_pipeline_audio(testset.DEFAULT_DIR / i["file"]) for i in items]
    home = testset.ROOT / "config" / "home.yaml"
    hassil = HassilIntent(HassilOptions(home=str(home), sentences=[]))
    hassil.load()
    app = App(hassil)
    local = WhisperCt2Asr(WhisperCt2Options(), app)
    local.load()
    single = WhisperCt2Asr(WhisperCt2Options(cpu_threads=1), app)
    single.load()
    cost: dict[str, list[list[float]]] = {
        "c": [[] for _ in utterances],
        "c1": [[] for _ in utterances],
    }
    for _ in range(2):
        for index, audio in enumerate(utterances):
            for key, engine in (("c", local), ("c1", single)):
                started = time.perf_counter()
                engine.transcribe(audio)
                cost[key][index].append(time.perf_counter() - started)
    single.close()
    each = [(min(a), min(b)) for a, b in zip(cost["c"], cost["c1"], strict=True)]
    jobs = [[each[i] for i in said] for said in batches(len(utterances), rooms, rounds)]
    c = stats([a for a, _ in each])["median"]
    c1 = stats([b for _, b in each])["median"]
    cores = os.cpu_count() or 1
    section = Section("pool-rooms")
    section.rows.append(Row.of("pool-rooms", "one utterance alone, in-process (c)", "ms",
                               stats([a for a, _ in each])))  # fmt: skip
    section.rows.append(Row.of("pool-rooms", "the same on one thread (c1)", "ms",
                               stats([b for _, b in each])))  # fmt: skip
    results: dict[str, Any] = {"cost_s": each, "cores": cores, "levels": []}
    local_median = None

    def add(label: str, w: int, measured: dict[str, Any], extra: dict[str, Any]) -> None:
        nonlocal local_median
        summary = stats(measured["latency_s"])
        local_median = local_median or summary["median"]
        model = predicted(jobs, w, cores)
        local_model = predicted(jobs, 1, cores)["median"]
        lost = measured["failed"] + (
            sum(n for e, n in measured["by_engine"].items() if e != "mqtt-pool") if w else 0
        )
        note = (
            f"model {model['median'] * 1000:.0f}/{model['p90'] * 1000:.0f} ms "
            f"({model['median'] / local_model:.2f}x local); lost {lost}, doubled "
            f"{extra.get('doubled', 0)}, sent at once {extra.get('max_in_flight', '-')}, "
            f"worked at once {extra.get('worked_at_once', '-')}"
        )
        section.rows.append(
            Row.of("pool-rooms", f"{label}: {rooms} rooms at once, end of speech -> transcript",
                   "ms", summary, peer=f"{summary['median'] / local_median:.2f}x local",
                   note=note)
        )  # fmt: skip
        results["levels"].append({"label": label, "workers": w, "model": model, "lost": lost,
                                  **measured, **extra})  # fmt: skip
        print(f"  {label}: median {summary['median']:.3f} s; {note}", file=sys.stderr)

    local_chain = EngineChain("asr", [("whisper-ctranslate2", local)], lambda e: None)
    local_chain.loaded = list(local_chain.engines)
    add("0 workers (local)", 0, measure(local_chain, utterances, rooms, rounds, "local"), {})
    levels = [w for w in workers if w > 0] + ([kill] if kill else [])
    with tempfile.TemporaryDirectory(prefix="voiced-rooms-") as tmp:
        folder = Path(tmp)
        broker = Broker(folder)
        replies = Replies(broker.port)
        try:
            for index, w in enumerate(levels):
                killing = kill is not None and index == len(levels) - 1
                procs = start_workers(folder, broker, w)
                front, chain = pool_chain(broker, app, local, w)
                try:
                    wait_ready(front, chain, w, utterances[0])
                    front.stats.max_in_flight = 0
                    replies.clear()

                    def killer(procs: list[Any] = procs) -> None:
                        """SIGKILL the worker that claims the round's first job."""
                        since, deadline = time.monotonic(), time.monotonic() + 30
                        while (victim := replies.first_claim(since)) is None:
                            if time.monotonic() > deadline:
                                return
                            time.sleep(0.01)
                        procs[int(victim.removeprefix("bench"))].kill()

                    label = f"{w} workers" + (", one killed mid-load" if killing else "")
                    measured = measure(chain, utterances, rooms, rounds, f"w{w}-{index}",
                                       killer if killing else None)  # fmt: skip
                    time.sleep(1.0)  # late duplicates arrive
                    add(label, w, measured, {
                        **replies.counts(),
                        "max_in_flight": front.stats.max_in_flight,
                        "duplicates_dropped": front.stats.duplicates_dropped,
                        "resent": front.stats.resent,
                    })  # fmt: skip
                finally:
                    front.close()
                    for proc in procs:
                        proc.terminate()
                    for proc in procs:
                        proc.wait(30)
        finally:
            replies.close()
            broker.stop()
    local.close()
    with open("/proc/loadavg") as f:
        load = f.read().split()[:3]
    results["loadavg"] = load
    section.results = results
    section.notes.append(
        f"{rooms} rooms x {rounds} rounds per row; c = {c * 1000:.0f} ms, c1 = {c1 * 1000:.0f} ms "
        f"(speed-up {c1 / c:.2f} on {cores} cores); load average after: {' '.join(load)}; "
        "workers, front end and broker share this machine's cores"
    )
    return section


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rooms", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--workers", default="1,2,3", help="worker counts besides the local row")
    parser.add_argument("--kill", type=int, default=3, help="workers of the kill row (0: none)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    workers = [int(n) for n in args.workers.split(",") if n.strip()]
    section = run(args.rooms, args.rounds, workers, args.kill or None)
    section.report(args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
