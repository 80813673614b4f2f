"""``voiced speakers enroll|list|forget``: the enrolled voices, from the command line.

``enroll NAME`` records the three guided sentences from the microphone (any source stage:
``--source sounddevice``, the default) or takes WAV files (``--wav A.wav B.wav C.wav``);
each clip is checked (``voiced.enrollment``) and only the embeddings are stored.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

from voiced.audio import AudioFormatError, read_pipeline_audio
from voiced.enrollment import SENTENCES, Clip, EnrollmentError, voice_of
from voiced.speaker_id import voices_path
from voiced.speakers import VoiceBook, VoiceBookError, normalize_speaker_name

HELP = "enroll, list and forget the voices voiced knows (who is speaking)"
RECORD_SECONDS = 20.0  # the longest wait for one sentence from the microphone


def configure_speakers_parser(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="speakers_command", metavar="COMMAND", required=True)
    p = sub.add_parser("enroll", help="learn a person's voice from 3 sentences")
    p.add_argument("name", help="the person's name (as permissions name them)")
    p.add_argument("--wav", nargs="+", type=Path, metavar="FILE", help="clips instead of the mic")
    p.add_argument(
        "--source", default="sounddevice", metavar="NAME[:VALUE]", help="where to record"
    )
    p.add_argument("--encoder", help="speaker stage (default: pipeline.speaker, else ge2e)")
    sub.add_parser("list", help="the enrolled voices")
    p = sub.add_parser("forget", help="remove a person's voice")
    p.add_argument("name")


def run_speakers(args: argparse.Namespace) -> int:
    from voiced.cli import plugin_host, stage_overrides
    from voiced.daemon import prepare

    host = plugin_host()
    recording = args.speakers_command == "enroll" and not args.wav
    overrides = stage_overrides("source", [args.source], host) if recording else {}
    settings, host = prepare(args.config, overrides, host=host)
    encoder_name = getattr(args, "encoder", None) or next(iter(settings.pipeline.speaker), "ge2e")
    path = voices_path(settings.speakers)
    try:
        if args.speakers_command == "list":
            return _list(VoiceBook.open(path, _model(host, encoder_name)))
        if args.speakers_command == "forget":
            return _forget(VoiceBook.open(path, _model(host, encoder_name)), args.name)
        return _enroll(args, settings, host, encoder_name)
    except (VoiceBookError, EnrollmentError, ValueError) as exc:
        print(f"voiced speakers {args.speakers_command}: {exc}", file=sys.stderr)
        return 1


def _model(host: Any, encoder_name: str) -> str:
    spec = host.stage_spec("speaker", encoder_name)
    if spec is None:
        raise ValueError(f"no speaker stage {encoder_name!r} (see `voiced plugins`)")
    return str(getattr(spec.factory, "name", encoder_name))


def _list(book: VoiceBook) -> int:
    if not book.voices:
        print(f"no voices enrolled ({book.path})")
    for name in book.names():
        meta = book.meta.get(name, {})
        print(f"{name}\t{meta.get('utterances', '?')} utterances\t{meta.get('enrolled', '')}")
    return 0


def _forget(book: VoiceBook, name: str) -> int:
    if not book.forget(name):
        print(f"voiced speakers forget: nobody called {name!r} is enrolled", file=sys.stderr)
        return 1
    print(f"forgot {name}")
    return 0


def _enroll(args: argparse.Namespace, settings: Any, host: Any, encoder_name: str) -> int:
    from voiced.building import make_stage

    name = normalize_speaker_name(args.name)
    book = VoiceBook.open(voices_path(settings.speakers), _model(host, encoder_name))
    clips = _wav_clips(args.wav) if args.wav else _record(settings, host)
    encoder = make_stage(host, settings, "speaker", encoder_name, app=None)
    encoder.load()
    try:
        rule = settings.speakers.rule()
        voices = voice_of(clips, encoder, rule.alone + rule.threshold)
    finally:
        encoder.close()
    book.enroll(name, [v.vector for v in voices])
    print(f"enrolled {name} from {len(voices)} clips in {book.path}")
    return 0


def _wav_clips(paths: list[Path]) -> list[Clip]:
    clips = []
    for path in paths:
        try:
            clips.append(Clip(str(path), read_pipeline_audio(path)))
        except (AudioFormatError, OSError) as exc:
            raise EnrollmentError(f"{path}: {exc}") from None
    return clips


def _record(settings: Any, host: Any) -> list[Clip]:
    """The guided sentences from the source stage (``--source``), one utterance each."""
    return asyncio.run(_record_async(settings, host))


async def _record_async(settings: Any, host: Any) -> list[Clip]:
    from voiced.building import make_stage
    from voiced.segmenter import UtteranceSegmenter

    source = make_stage(host, settings, "source", settings.pipeline.source[0], app=None)
    vad = make_stage(host, settings, "vad", settings.pipeline.vad, app=None)
    source.load()
    vad.load()
    segmenter = UtteranceSegmenter(vad, settings.vad.model_copy(update={"early_commit": False}))
    clips: list[Clip] = []
    chunks = source.chunks()
    try:
        for i, sentence in enumerate(SENTENCES, 1):
            print(f"{i}/{len(SENTENCES)}  say: {sentence}", flush=True)
            audio = await asyncio.wait_for(_next_utterance(chunks, segmenter), RECORD_SECONDS)
            if audio is None:
                raise EnrollmentError(f"the source ended before sentence {i} was heard")
            clips.append(Clip(f"sentence {i}", audio))
        return clips
    except TimeoutError:
        raise EnrollmentError(
            f"sentence {len(clips) + 1}: no speech heard in {RECORD_SECONDS:g} s"
        ) from None
    finally:
        await chunks.aclose()
        source.close()
        vad.close()


async def _next_utterance(chunks: Any, segmenter: Any) -> bytes | None:
    from voiced.segmenter import SpeechEnded

    async for chunk in chunks:
        for event in segmenter.feed(chunk.audio):
            if isinstance(event, SpeechEnded):
                return event.audio
    ended = [e for e in segmenter.flush() if isinstance(e, SpeechEnded)]
    return ended[0].audio if ended else None
