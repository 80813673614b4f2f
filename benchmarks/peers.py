"""How the peers voiced is measured against are started: one command line per peer.

``wyoming-faster-whisper`` (PyPI) is the Wyoming ASR Home Assistant users run; the
benchmarks and the remote-ASR tests start it on the same model as voiced, on 127.0.0.1, with
nothing downloaded (``--local-files-only``).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path


def console_script(name: str, module: str, python: str = sys.executable) -> list[str]:
    """The head of a command for a package's console script beside ``python`` (or ``-m``)."""
    exe = shutil.which(name, path=str(Path(python).parent))
    return [exe] if exe else [python, "-m", module]


def faster_whisper_command(
    head: list[str],
    port: int,
    model: str | Path,
    data_dir: Path,
    *,
    device: str = "cpu",
    compute_type: str = "int8",
    threads: int = 1,
) -> list[str]:
    """``wyoming-faster-whisper`` serving ``model`` (a CTranslate2 folder) on 127.0.0.1:``port``,
    English, greedy (beam 1) as voiced's own first pass."""
    data_dir.mkdir(parents=True, exist_ok=True)
    return [
        *head,
        "--uri",
        f"tcp://127.0.0.1:{port}",
        "--model",
        str(model),
        "--data-dir",
        str(data_dir),
        "--local-files-only",
        "--language",
        "en",
        "--beam-size",
        "1",
        "--device",
        device,
        "--compute-type",
        compute_type,
        "--cpu-threads",
        str(threads),
    ]
