"""The espeak TTS engine: eSpeak NG for any language it speaks, offline, no model file."""

from __future__ import annotations

import re
import struct

import numpy as np
import pytest
from voiced_plugins.tts_espeak import (
    EspeakError,
    EspeakOptions,
    EspeakTts,
    EspeakVoice,
    find_voice,
    parse_voices,
    wav_payload,
)

from voiced.audio import PIPELINE_FORMAT, convert, pcm_to_float

LISTING = """Pty Language       Age/Gender VoiceName          File                 Other Languages
 5  cmn             --/M      Chinese_(Mandarin,_latin_as_English) sit/cmn  (zh-cmn 5)(zh 5)
 5  de              --/M      German             gmw/de
 2  en-gb           --/M      English_(Great_Britain) gmw/en               (en 2)
 5  en-029          --/M      English_(Caribbean) gmw/en-029           (en 10)
 2  en-us           --/M      English_(America)  gmw/en-US            (en 3)
"""


def espeak(voice: str = "en-us", **options) -> EspeakTts:
    tts = EspeakTts(EspeakOptions(voice=voice, **options))
    tts.load()
    return tts


def words(text: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9 ]+", " ", text.lower()).split())


def loud(chunk) -> bool:
    return float(np.abs(chunk.to_array()).max()) > 0.1


def test_the_voice_list_is_read_with_other_languages_and_their_priorities():
    voices = parse_voices(LISTING)
    assert voices[0] == EspeakVoice(
        "cmn", "Chinese_(Mandarin,_latin_as_English)", "sit/cmn", (("zh-cmn", 5), ("zh", 5))
    )
    assert [v.language for v in voices] == ["cmn", "de", "en-gb", "en-029", "en-us"]


@pytest.mark.parametrize(
    ("wanted", "language"),
    [("de", "de"), ("zh", "cmn"), ("en", "en-gb"), ("English_(America)", "en-us"),
     ("gmw/en-US", "en-us"), ("EN-US", "en-us")],
)  # fmt: skip
def test_a_voice_is_found_by_language_name_or_file_best_priority_first(wanted, language):
    assert find_voice(parse_voices(LISTING), wanted).language == language


def test_a_voice_espeak_does_not_know_is_a_clear_error_with_close_names():
    with pytest.raises(EspeakError, match=r"no voice 'deu'.*did you mean .*\bde\b"):
        espeak("deu")


def test_a_missing_espeak_program_names_the_package_to_install():
    with pytest.raises(EspeakError, match="apt install espeak-ng"):
        espeak(binary="espeak-ng-that-is-not-installed")


def test_the_wav_espeak_writes_to_a_pipe_is_read_despite_its_placeholder_sizes():
    pcm = struct.pack("<4h", 0, 1000, -1000, 0)
    fmt = struct.pack("<HHIIHH", 1, 1, 22050, 44100, 2, 16)
    header = b"RIFF\xff\xff\xff\x7fWAVEfmt " + struct.pack("<I", 16) + fmt
    data = header + b"data\xff\xff\xff\x7f" + pcm
    assert wav_payload(data) == (22050, pcm)
    with pytest.raises(EspeakError, match="no WAV"):
        wav_payload(b"not a wav at all, just some bytes of text here!!")


@pytest.mark.slow
def test_an_english_sentence_is_spoken_so_whisper_hears_the_command(whisper):
    chunk = espeak("en-us", speed=150).synthesize("Turn on the kitchen lights.")
    pcm = convert(chunk.audio, chunk.format, PIPELINE_FORMAT)
    lead = np.zeros(PIPELINE_FORMAT.rate // 5, dtype=np.float32)
    audio = np.concatenate([lead, pcm_to_float(pcm, PIPELINE_FORMAT)[:, 0], lead])
    segments, _ = whisper.transcribe(audio, language="en", beam_size=5)
    assert "kitchen light" in words(" ".join(s.text for s in segments))


@pytest.mark.parametrize(
    ("voice", "text", "language"),
    [("cmn", "打开厨房的灯。", "cmn"), ("de", "Schalte das Licht in der Küche ein.", "de")],
)
def test_mandarin_and_german_are_spoken_in_their_own_voice(voice, text, language):
    tts = espeak(voice)
    chunk = tts.synthesize(text)
    assert tts.info["language"] == language
    assert (chunk.format.rate, chunk.format.width, chunk.format.channels) == (22050, 2, 1)
    assert 0.8 < chunk.seconds < 6.0 and loud(chunk)


def test_text_that_looks_like_an_option_is_spoken_not_obeyed():
    chunk = espeak().synthesize("--version -v xx")
    assert chunk.seconds > 0.5 and loud(chunk)


def test_empty_text_is_an_error_not_silence():
    with pytest.raises(EspeakError, match="empty"):
        espeak().synthesize("  ")


def test_slower_speech_lasts_longer():
    sentence = "The washing machine is done."
    assert espeak(speed=100).synthesize(sentence).seconds > (
        1.3 * espeak(speed=250).synthesize(sentence).seconds
    )
