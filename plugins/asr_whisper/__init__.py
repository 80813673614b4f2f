"""Whisper ASR: a CPU engine (faster-whisper/CTranslate2) and a GPU engine (transformers/torch).

Nothing heavy is imported here: faster-whisper, torch and transformers load in ``load()``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from voiced.api.hooks import hookimpl

from .common import WhisperOptions
from .models import ModelError


def _ct2_factory(options: Any, app: Any) -> Any:
    from .ct2 import WhisperCt2Asr

    return WhisperCt2Asr(options, app)


def _transformers_factory(options: Any, app: Any) -> Any:
    from .torch_engine import WhisperTransformersAsr

    return WhisperTransformersAsr(options, app)


@hookimpl
def voiced_register_stages(register: Callable[..., None]) -> None:
    from .ct2 import WhisperCt2Options
    from .torch_engine import WhisperTransformersOptions

    register(
        "asr",
        "whisper-ctranslate2",
        _ct2_factory,
        options=WhisperCt2Options,
        description="Whisper on faster-whisper/CTranslate2: int8 on the CPU, float16 on CUDA "
        "(CTranslate2 has no ROCm build: AMD GPUs use whisper-transformers)",
    )
    register(
        "asr",
        "whisper-transformers",
        _transformers_factory,
        options=WhisperTransformersOptions,
        description="Whisper on transformers/torch: float16 on ROCm or CUDA, float32 on the CPU "
        "(needs voiced[gpu])",
    )


def _configure_convert(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Convert a CTranslate2 Whisper directory (model.bin, config.json, tokenizer.json: what "
        "faster-whisper uses) into a transformers checkpoint for the whisper-transformers "
        "engine. SRC may be 'bundled:tiny.en'. Needs torch, transformers and safetensors."
    )
    parser.add_argument("src", metavar="SRC", help="CTranslate2 Whisper directory or bundled:NAME")
    parser.add_argument("dst", metavar="DST", help="output directory (created)")


def _run_convert(args: argparse.Namespace) -> int:
    from .convert import ConversionError, convert_ct2_to_transformers
    from .models import bundled_ct2_dir

    try:
        src = (
            bundled_ct2_dir(args.src.removeprefix("bundled:"))
            if args.src.startswith("bundled:")
            else args.src
        )
        dst = convert_ct2_to_transformers(src, args.dst)
    except (ConversionError, ModelError, OSError) as exc:
        print(f"voiced models convert-ct2: {exc}", file=sys.stderr)
        return 2
    print(dst)
    return 0


@hookimpl
def voiced_register_commands(add_command: Callable[..., Any]) -> None:
    add_command(
        "models convert-ct2",
        "convert a CTranslate2 (faster-whisper) Whisper model to a transformers checkpoint",
        _configure_convert,
        _run_convert,
    )


def convert_ct2_to_transformers(src: Any, dst: Any) -> Any:
    """CTranslate2 Whisper dir -> transformers checkpoint (see ``convert.py``)."""
    from .convert import convert_ct2_to_transformers as convert

    return convert(src, dst)


__all__ = ["ModelError", "WhisperOptions", "convert_ct2_to_transformers"]
