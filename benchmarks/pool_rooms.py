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

The cost model: each utterance, measured in-process first, is ``c1`` s of one core's work
(the engine on one thread); alone, the engine does it in ``c`` s (its threads: speed-up ``s =
c1 / c``, between 1 and the cores ``K``). The local engine interleaves the rooms' utterances
(``interleaved_burst``: they share its speed equally). Workers (``shared_cores_burst``) take
their jobs one at a time, round the workers; ``m`` jobs in progress at once each run at
``min(s, K / m)`` cores. The model gets the same bursts as the rows.

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
    """Finish times (s) of ``jobs`` (each ``(c, c1)``) arriving at once on ``workers`` worker
    processes that share ``cores`` cores: each worker takes its jobs one at a time (round the
    workers, in order); ``m`` jobs in progress at once each run at ``min(s, K / m)`` cores."""
    queues = [list(range(w, len(jobs), workers)) for w in range(workers)]
    left = {w: jobs[q[0]][1] for w, q in enumerate(queues) if q}  # worker -> core-seconds
    now, done = 0.0, []
    while left:
        speed = {w: min(speedup(jobs[queues[w][0]], cores), cores / len(left)) for w in left}
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


def interleaved_burst(jobs: list[tuple[float, float]], cores: int) -> list[float]:
    """Finish times (s) of ``jobs`` arriving at once on one in-process engine: its calls
    interleave (the recognizer's many small model calls take turns), so the jobs share the
    engine's speed ``s`` equally (processor sharing)."""
    left = {j: c1 for j, (_, c1) in enumerate(jobs)}
    now, done = 0.0, []
    while left:
        speed = {j: min(speedup(jobs[j], cores), cores) / len(left) for j in left}
        step = min(left[j] / speed[j] for j in left)
        now += step
        for j in list(left):
            left[j] -= step * speed[j]
            if left[j] <= 1e-9:
                done.append(now)
                del left[j]
    return sorted(done)


def speedup(job: tuple[float, float], cores: int) -> float:
    """The engine's threads' speed-up on ``job``: ``c1 / c``, between 1 and the cores."""
    c, c1 = job
    return max(1.0, min(c1 / c, float(cores)))


def predicted(
    batches: list[list[tuple[float, float]]], workers: int, cores: int
) -> dict[str, float]:
    """The model's median and p90 over the bursts, as the measured rows are summed (``workers``
    0: the local engine)."""
    finish = [
        t
        for batch in batches
        for t in (
            shared_cores_burst(batch, workers, cores)
            if workers
            else interleaved_burst(batch, cores)
        )
    ]
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


def in_process_costs(utterances: list[bytes], app: Any, local: Any) -> list[tuple[float, float]]:
    """Each utterance's ``(c, c1)``: in-process with the engine's threads, and on one thread
    (the better of two tries each)."""
    from voiced_plugins.asr_whisper.ct2 import WhisperCt2Asr, WhisperCt2Options

    single = WhisperCt2Asr(WhisperCt2Options(cpu_threads=1), app)
    single.load()
    tries: list[list[list[float]]] = [[[], []] for _ in utterances]
    for _ in range(2):
        for index, audio in enumerate(utterances):
            for key, engine in enumerate((local, single)):
                started = time.perf_counter()
                engine.transcribe(audio)
                tries[index][key].append(time.perf_counter() - started)
    single.close()
    return [(min(c), min(c1)) for c, c1 in tries]


class Report:
    """The section's rows: each level measured beside the model's prediction."""

    def __init__(self, rooms: int, jobs: list[list[tuple[float, float]]], cores: int) -> None:
        self.rooms, self.jobs, self.cores = rooms, jobs, cores
        self.section = Section("pool-rooms")
        self.levels: list[dict[str, Any]] = []
        self.local_median: float | None = None

    def add(self, label: str, w: int, measured: dict[str, Any], extra: dict[str, Any]) -> None:
        summary = stats(measured["latency_s"])
        self.local_median = self.local_median or summary["median"]
        model = predicted(self.jobs, w, self.cores)
        local_model = predicted(self.jobs, 0, self.cores)["median"]
        pool_missed = sum(n for e, n in measured["by_engine"].items() if e != "mqtt-pool")
        lost = measured["failed"] + (pool_missed if w else 0)
        note = (
            f"model {model['median'] * 1000:.0f}/{model['p90'] * 1000:.0f} ms "
            f"({model['median'] / local_model:.2f}x local); lost {lost}, doubled "
            f"{extra.get('doubled', 0)}, sent at once {extra.get('max_in_flight', '-')}, "
            f"worked at once {extra.get('worked_at_once', '-')}"
        )
        what = f"{label}: {self.rooms} rooms at once, end of speech -> transcript"
        peer = f"{summary['median'] / self.local_median:.2f}x local"
        self.section.rows.append(Row.of("pool-rooms", what, "ms", summary, peer=peer, note=note))
        self.levels.append(
            {"label": label, "workers": w, "model": model, "lost": lost, **measured, **extra}
        )
        print(f"  {label}: median {summary['median']:.3f} s; {note}", file=sys.stderr)


def pool_level(
    folder: Path, broker: Broker, replies: Replies, setup: dict[str, Any], w: int, kill: bool
) -> tuple[dict[str, Any], dict[str, Any]]:
    """One pool row: ``w`` workers started, ready, the rounds measured (``kill``: one worker
    SIGKILLed at the second round's first claim)."""
    procs = start_workers(folder, broker, w)
    front, chain = pool_chain(broker, setup["app"], setup["local"], w)
    utterances, rooms, rounds = setup["utterances"], setup["rooms"], setup["rounds"]

    def killer() -> None:
        since, deadline = time.monotonic(), time.monotonic() + 30
        while (victim := replies.first_claim(since)) is None:
            if time.monotonic() > deadline:
                return
            time.sleep(0.01)
        procs[int(victim.removeprefix("bench"))].kill()

    try:
        wait_ready(front, chain, w, utterances[0])
        front.stats.max_in_flight = 0
        replies.clear()
        measured = measure(
            chain, utterances, rooms, rounds, f"w{w}-{kill}", killer if kill else None
        )
        time.sleep(1.0)  # late duplicates arrive
        stats_now = front.stats
        return measured, {
            **replies.counts(),
            "max_in_flight": stats_now.max_in_flight,
            "duplicates_dropped": stats_now.duplicates_dropped,
            "resent": stats_now.resent,
        }
    finally:
        front.close()
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(30)


def pool_rows(report: Report, setup: dict[str, Any], levels: list[tuple[int, bool]]) -> None:
    """The pool's rows, on one broker: (workers, whether one is killed) per row."""
    with tempfile.TemporaryDirectory(prefix="voiced-rooms-") as tmp:
        broker = Broker(Path(tmp))
        replies = Replies(broker.port)
        try:
            for w, killing in levels:
                label = f"{w} workers" + (", one killed mid-load" if killing else "")
                report.add(label, w, *pool_level(Path(tmp), broker, replies, setup, w, killing))
        finally:
            replies.close()
            broker.stop()


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
    hassil = HassilIntent(HassilOptions(home=str(testset.ROOT / "config" / "home.yaml"),
                                        sentences=[]))  # fmt: skip
    hassil.load()
    app = App(hassil)
    local = WhisperCt2Asr(WhisperCt2Options(), app)
    local.load()
    each = in_process_costs(utterances, app, local)
    cores = os.cpu_count() or 1
    report = Report(rooms, [[each[i] for i in b] for b in batches(len(each), rooms, rounds)], cores)
    for index, what in enumerate(
        ("one utterance alone, in-process (c)", "the same on one thread (c1)")
    ):
        report.section.rows.append(
            Row.of("pool-rooms", what, "ms", stats([e[index] for e in each]))
        )
    local_chain = EngineChain("asr", [("whisper-ctranslate2", local)], lambda e: None)
    local_chain.loaded = list(local_chain.engines)
    report.add("0 workers (local)", 0, measure(local_chain, utterances, rooms, rounds, "local"), {})
    setup = {"app": app, "local": local, "utterances": utterances, "rooms": rooms, "rounds": rounds}
    levels = [(w, False) for w in workers if w > 0] + ([(kill, True)] if kill else [])
    pool_rows(report, setup, levels)
    local.close()
    with open("/proc/loadavg") as f:
        load = f.read().split()[:3]
    c, c1 = stats([e[0] for e in each])["median"], stats([e[1] for e in each])["median"]
    report.section.results = {"cost_s": each, "cores": cores, "levels": report.levels,
                              "loadavg": load}  # fmt: skip
    report.section.notes.append(
        f"{rooms} rooms x {rounds} rounds per row; median c = {c * 1000:.0f} ms, c1 = "
        f"{c1 * 1000:.0f} ms on {cores} cores; load average after: {' '.join(load)}; "
        "workers, front end and broker share this machine's cores"
    )
    return report.section


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
