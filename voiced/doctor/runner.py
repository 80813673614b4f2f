"""Running the doctor: every check group in order, plugins' checks, and the command line."""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import asdict
from pathlib import Path
from typing import Any

from voiced.config import stage_base_name
from voiced.doctor.checks import SECTIONS, Check, Report, render
from voiced.doctor.engines import engine_checks
from voiced.doctor.gpu_checks import gpu_checks
from voiced.doctor.hardware import current_user_groups, scan_hardware
from voiced.doctor.languages import language_checks
from voiced.doctor.models import load_checks, model_checks
from voiced.doctor.system import audio_checks, python_checks


def gpu_requested(settings: Any) -> bool:
    """Whether the pipeline needs a GPU: a stage in use asks for one explicitly
    (``device = "cuda"``) and no engine after it in its fallback chain can serve instead."""
    p = settings.pipeline
    # asr and tts are fallback chains: only their last engine has nothing behind it
    in_use = [("asr", p.asr[-1]), ("tts", p.tts[-1]), ("vad", p.vad)]
    in_use += [("wake", name) for name in p.wake] + [("intent", name) for name in p.intent]
    return any(_asks_for_gpu(settings, kind, name) for kind, name in in_use)


def _asks_for_gpu(settings: Any, kind: str, name: str) -> bool:
    options = settings.stage_options(kind, name)
    return str(options.get("device", "")).lower().startswith(("cuda", "gpu", "rocm"))


def audio_needed(settings: Any) -> bool:
    """Whether the pipeline uses a sound card (microphone or speaker)."""
    p = settings.pipeline
    return any(
        stage_base_name(name) in ("sounddevice", "microphone", "speaker")
        for name in (*p.source, *p.sink)
    )


def plugin_checks(host: Any, settings: Any) -> list[Check]:
    """Plugins that failed to load, and the checks plugins add by hook."""
    checks = []
    for info in host.failed():
        checks.append(
            Check(
                f"plugin {info.name}",
                None,
                f"failed to load: {info.error}",
                f"pip install the plugin's dependencies, or disable it: "
                f'[plugins] disabled = ["{info.name}"]',
                section="plugins",
            )
        )
    for impl in host.pm.hook.voiced_doctor_checks.get_hookimpls():
        try:
            results = impl.function(config=settings) or []
        except Exception as exc:
            checks.append(
                Check(
                    f"plugin {impl.plugin_name} checks",
                    False,
                    f"raised {type(exc).__name__}: {exc}",
                    section="plugins",
                )
            )
            continue
        for item in results:
            if isinstance(item, Check):
                checks.append(item)
            else:
                checks.append(
                    Check(
                        f"plugin {impl.plugin_name} checks",
                        False,
                        f"returned {type(item).__name__}, not voiced.doctor.Check",
                        section="plugins",
                    )
                )
    return checks


def diagnose(
    config: str | Path | None = None,
    matmul: bool = True,
    load: bool = False,
    extra_plugins: list[tuple[str, Any]] | None = None,
) -> Report:
    """Run every check; never raises for a problem it can describe."""
    from voiced import accel
    from voiced.building import check_config
    from voiced.config import ConfigError, Settings, load_settings
    from voiced.plugins import PluginError, load_plugins

    checks: list[Check] = []
    settings: Any
    try:
        settings = load_settings(config)
        where = str(settings.config_file or "built-in defaults")
        checks.append(Check("config", True, where, section="config"))
    except ConfigError as exc:
        settings = Settings()
        checks.append(
            Check(
                "config",
                False,
                str(exc),
                "fix the file; `voiced config` shows the effective values",
                required=True,
                section="config",
            )
        )
    host = None
    try:
        host = load_plugins(settings.plugins.disabled, extra_plugins or [])
    except PluginError as exc:
        checks.append(
            Check(
                "plugins",
                False,
                str(exc),
                "uninstall or fix that plugin",
                required=True,
                section="plugins",
            )
        )
    if host is not None:
        try:
            check_config(host, settings)
            checks.append(Check("stages", True, _pipeline_summary(settings), section="config"))
        except ConfigError as exc:
            checks.append(
                Check(
                    "stages",
                    False,
                    str(exc),
                    "name installed stages (`voiced plugins` lists them)",
                    required=True,
                    section="config",
                )
            )
    checks += python_checks()
    torch_probe = accel.probe_torch()
    ct2 = accel.probe_ctranslate2()
    onnx = accel.probe_onnxruntime()
    hw = scan_hardware()
    checks += gpu_checks(torch_probe, hw, current_user_groups(), gpu_requested(settings), matmul)
    checks += engine_checks(ct2, onnx, torch_probe)
    checks += audio_checks(audio_needed(settings))
    if host is not None:
        checks += model_checks(settings, host)
        checks += language_checks(settings)
        if load:
            checks += load_checks(settings, host)
        checks += plugin_checks(host, settings)
    facts = {
        "torch": torch_probe.to_dict(),
        "ctranslate2": ct2.to_dict(),
        "onnxruntime": onnx.to_dict(),
        "hardware": asdict(hw),
        "hsa_override_gfx_version": os.environ.get("HSA_OVERRIDE_GFX_VERSION"),
    }
    order = {s: i for i, s in enumerate(SECTIONS)}
    checks.sort(key=lambda c: order.get(c.section, len(order)))
    return Report(checks, facts)


def _pipeline_summary(settings: Any) -> str:
    """The configured stages in one line."""
    p = settings.pipeline
    return (
        f"source {p.source}, asr {p.asr}, intent {p.intent}, tts {p.tts}, "
        f"sink {p.sink}, service {p.service}"
    ).replace("'", "")


HELP = "check Python, GPU (ROCm/CUDA), engines, audio, MQTT and models; say how to fix"


def configure_doctor_parser(p: argparse.ArgumentParser) -> None:
    """Add the doctor's options to a parser."""
    p.add_argument("--json", action="store_true", help="machine-readable report")
    p.add_argument(
        "--no-gpu-test",
        action="store_true",
        help="skip the fp16 matmul on the GPU (it runs in a child process)",
    )
    p.add_argument(
        "--load", action="store_true", help="also load and warm up every configured model (slow)"
    )


def run_doctor(args: argparse.Namespace) -> int:
    """Print the checklist; exit status 1 when a required check failed."""
    report = diagnose(getattr(args, "config", None), matmul=not args.no_gpu_test, load=args.load)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2, default=str))
    else:
        print(render(report))
    return 1 if report.failed_required else 0


def main(argv: list[str] | None = None) -> int:
    """``python -m voiced.doctor`` (the same as ``voiced doctor``)."""
    parser = argparse.ArgumentParser(prog="voiced doctor", description=HELP)
    parser.add_argument("--config", "-c", metavar="PATH")
    configure_doctor_parser(parser)
    return run_doctor(parser.parse_args(argv))
