"""Speech heard through the worker pool and a remote voiced, beside the local engine in the
same run: does the home travel? On the held-out set by default, or the tuning set and fresh
sets (benchmarks/recognition.py's sets; each its own home, sent to the pool, given to the
remote voiced).

Rows (each file's transcript goes to the front end's hassil on the set's home, judged as in
benchmarks/recognition.py; latency is audio in -> intent out, one file at a time):

- local: whisper-ctranslate2 with the home (recognition.py's default row);
- pool, 2 workers: ``voiced worker`` processes behind mosquitto, the home sent to them
  (the front end's grammar, retained; workers built it before the first file);
- pool, 2 workers, no home (``send_home = false``): what the pool heard before;
- remote voiced: ``voiced run`` serving Wyoming ``asr`` with its own hassil on the set's home;
- remote voiced, no home (``intent = []``): a remote voiced as the tests set it up before.

    python -m benchmarks.recognition_scaleout [--set heldout|tuning|fresh[,...]] [--seed N[,N...]]
        [--only ROW,ROW] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from benchmarks.common import ensure_importable
from benchmarks.pool import Broker, start_workers
from benchmarks.recognition import App, Row, file_record, judge, pipeline_audio
from benchmarks.remote_stream import REMOTE_VOICED, free_port, wait_listening

HOME_INTENT = """
[stages.intent.hassil]
home = "{home}"
sentences = []
"""

Hear = Callable[[bytes], Any]  # audio -> a transcript


@contextmanager
def remote_voiced(folder: Path, home: Path | None) -> Iterator[Hear]:
    """A second voiced serving Wyoming ``asr`` (with ``home``: hassil on it, its recognizer's
    home), and the front end's remote stage to it."""
    from voiced_plugins.remote.asr import RemoteAsrOptions, RemoteWyomingAsr

    port = free_port()
    config = folder / f"remote-{port}.toml"
    text = REMOTE_VOICED.format(port=port)
    if home is not None:
        text = text.replace("intent = []", 'intent = ["hassil"]') + HOME_INTENT.format(home=home)
    config.write_text(text)
    env = {k: v for k, v in os.environ.items() if not k.startswith("VOICED_")}
    with (folder / f"remote-{port}.log").open("ab") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "voiced.cli", "--config", str(config), "run"],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
        )
    stage = None
    try:
        wait_listening(process, port)
        stage = RemoteWyomingAsr(RemoteAsrOptions(uri=f"tcp://127.0.0.1:{port}", timeout=60), None)
        stage.load()
        yield stage.transcribe
    finally:
        if stage is not None:
            stage.close()
        process.terminate()
        process.wait(30)


@contextmanager
def pool(folder: Path, app: Any, workers: int, send_home: bool) -> Iterator[Hear]:
    """``workers`` ``voiced worker`` processes behind mosquitto, and the front end to them,
    each worker ready (with the home built, when it is sent)."""
    from voiced_plugins.asr_pool.frontend import MqttPoolAsr
    from voiced_plugins.asr_pool.options import PoolOptions

    broker = Broker(folder)
    procs = start_workers(folder, broker, workers)
    options = PoolOptions.model_validate(
        {**broker.pool_options(), "send_home": send_home, "client_id": f"held-out-{send_home}"}
    )
    front = MqttPoolAsr(options, app)
    try:
        front.load()
        wait_ready(front, workers, send_home)
        yield front.transcribe
    finally:
        front.close()
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(30)
        broker.stop()


def wait_ready(front: Any, workers: int, send_home: bool) -> None:
    from benchmarks.pool_rooms import burst

    class Direct:
        def call(self, method: str, audio: bytes, language: str, **_: Any) -> Any:
            return "mqtt-pool", front.transcribe(audio, language)

    deadline = time.monotonic() + 240
    while len(front.online_workers()) < workers:
        if time.monotonic() > deadline:
            raise RuntimeError(f"only {front.online_workers()} came online")
        time.sleep(0.2)
    ready: set[str] = set()
    silence = b"\0\0" * 16000
    while len(ready) < workers:
        if time.monotonic() > deadline:
            raise RuntimeError(f"ready: {sorted(ready)} only")
        for _, _, transcript in burst(Direct(), [silence] * workers, "warm"):
            if not isinstance(transcript, Exception) and (
                not send_home or transcript.data["home"]["status"] == "used"
            ):
                ready.add(transcript.data["worker"])
        time.sleep(0.5)


def score(label: str, hear: Hear, stage: Any, files: list[tuple[dict, bytes]]) -> Row:
    """One row: every file heard, its transcript matched by the front end's hassil, judged."""
    row = Row(label)
    for item, audio in files:
        started = time.perf_counter()
        transcript = hear(audio)
        heard = transcript.text if not transcript.no_speech else ""
        intent = stage.recognize(heard) if heard.strip() else None
        row.latencies_ms.append((time.perf_counter() - started) * 1000)
        verdict = judge(intent, item["expected"])
        row.files.append({**file_record(item, verdict, row.latencies_ms[-1], None, None),
                          "heard": heard})  # fmt: skip
        if item["kind"] == "command":
            row.commands += 1
            clean = item["snr_db"] is None
            row.clean += clean
            row.right += verdict == "right"
            row.clean_right += clean and verdict == "right"
            row.wrong += verdict == "wrong"
            if verdict != "right":
                row.misses.append(f"{item['file']}: {item['text']!r} heard {heard!r}")
        else:
            row.idle += 1
            if verdict == "false":
                row.false_activations += 1
                row.misses.append(f"FALSE {item['file']}: heard {heard!r} -> {intent.name}")
    print(f"# {label}: done", file=sys.stderr, flush=True)
    return row


def run_set(
    folder: Path, name: str, manifest: dict[str, Any], root: Path, only: list[str]
) -> list[Row]:
    """Every row asked for (``only``: label prefixes) on the set ``name``, each with the set's
    home."""
    from voiced_plugins.asr_whisper.ct2 import WhisperCt2Asr, WhisperCt2Options
    from voiced_plugins.intent_hassil import HassilIntent, HassilOptions

    files = [(item, pipeline_audio(str(root / item["file"]))) for item in manifest["items"]]
    stage = HassilIntent(HassilOptions(home="", sentences=[]))
    stage.load()
    stage.use_home(manifest["home"])
    app = App(stage)
    home_file = folder / f"home-{name}.yaml"
    home_file.write_text(yaml.safe_dump(manifest["home"]))

    @contextmanager
    def local() -> Iterator[Hear]:
        engine = WhisperCt2Asr(WhisperCt2Options(), app)
        engine.load()
        try:
            yield engine.transcribe
        finally:
            engine.close()

    rows: dict[str, Callable[[], Any]] = {
        "local: whisper-ctranslate2 with the home": local,
        "pool, 2 workers, the home sent": lambda: pool(folder, app, 2, True),
        "pool, 2 workers, no home sent": lambda: pool(folder, app, 2, False),
        "remote voiced with the home": lambda: remote_voiced(folder, home_file),
        "remote voiced without a home": lambda: remote_voiced(folder, None),
    }
    results = []
    for label, make in rows.items():
        if only and not any(label.startswith(o) for o in only):
            continue
        with make() as hear:
            hear(files[0][1])  # warm up
            results.append(score(label, hear, stage, files))
    stage.close()
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--set", default="heldout", help="comma list of heldout, tuning, fresh (default heldout)"
    )
    parser.add_argument("--seed", default="", help="comma list of fresh sets' seeds")
    parser.add_argument("--only", default="", help="comma list of row labels (prefixes)")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON too")
    args = parser.parse_args(argv)
    ensure_importable()
    from benchmarks.recognition import listed, load_average, load_sets, print_table, totals

    sets = load_sets(listed(args.set), [int(s) for s in listed(args.seed)])
    print(f"load average at start: {load_average()}", flush=True)
    results: list[tuple[str, Row]] = []
    with tempfile.TemporaryDirectory(prefix="voiced-scaleout-") as tmp:
        for name, manifest, root in sets:
            commands = sum(i["kind"] == "command" for i in manifest["items"])
            print(f"{name} set: {len(manifest['items'])} files ({commands} commands)", flush=True)
            rows = run_set(Path(tmp), name, manifest, Path(root), listed(args.only))
            results += [(name, row) for row in rows]
    print(f"load average at the end: {load_average()}; tiny.en int8 CPU everywhere")
    print_table(results + (totals(results) if len(sets) > 1 else []))
    for name, row in results:
        print(f"\n{name}: {row.label}: misses")
        for miss in row.misses:
            print(f"  {miss}")
    if args.json:
        print(json.dumps([{"set": n, **r.__dict__} for n, r in results], default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
