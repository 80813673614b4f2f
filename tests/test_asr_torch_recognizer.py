"""whisper-transformers runs the recognizer's driver, as whisper-ctranslate2 does: real speech
(Piper, espeak-ng), the bundled tiny.en converted for torch (float32 on the CPU) beside the
CTranslate2 package itself (int8, its default on the CPU, and float32), the home
config/home.yaml.

The torch engine's scoring primitives compute what CTranslate2's compute: in float32 both give
the same numbers; int8 moves them (by up to 0.8 a token, measured, on the first word and the
end of text), so against int8 what must agree is what the scores decide."""

from __future__ import annotations

import numpy as np
import pytest
from home_stages import App, home_hassil, loaded
from speech import espeak, silence, steady_piper
from voiced_plugins.asr_whisper.common import pcm16_to_float
from voiced_plugins.asr_whisper.ct2 import WhisperCt2Asr, WhisperCt2Options
from voiced_plugins.asr_whisper.torch_engine import (
    WhisperTransformersAsr,
    WhisperTransformersOptions,
)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def snapping():
    """The stage with name snapping only: where a slip shows."""
    return home_hassil(repair=False)


@pytest.fixture(scope="module")
def engines(hassil, tmp_path_factory):
    pytest.importorskip("transformers", reason="whisper-transformers needs voiced[gpu]")
    cache = str(tmp_path_factory.mktemp("models"))
    with loaded(
        {
            "ct2": WhisperCt2Asr(WhisperCt2Options(), App(hassil)),
            "ct2 float32": WhisperCt2Asr(WhisperCt2Options(compute_type="float32")),
            "torch": WhisperTransformersAsr(
                WhisperTransformersOptions(cache_dir=cache, device="cpu"), App(hassil)
            ),
        }
    ) as made:
        yield made


def test_a_command_runs_the_drivers_steps_and_is_recorded(engines):
    transcript = engines["torch"].transcribe(steady_piper("Turn on the kitchen lights."))
    assert transcript.text == "Turn on the kitchen lights."
    assert transcript.engine == "whisper-transformers"
    assert transcript.data["hypothesis"] == {
        "index": 0,
        "retried": False,
        "why": "top hypothesis is a command",
    }
    assert [s["step"] for s in transcript.data["decision"]["steps"]] == ["first", "fallback"]
    assert (transcript.data["device"], transcript.data["dtype"]) == ("cpu", "float32")


@pytest.mark.parametrize(
    ("spoken", "voice", "wpm", "entities"),
    [
        ("turn on the bedroom fan", "en-sc", 175, ["fan.bedroom"]),
        ("close the living room blinds", "en-us", 175, ["cover.living_room_blinds"]),
    ],  # heard: "Turn on the bedroom file." / "close and living room blinds"
)
def test_rescoring_mends_a_slip_as_on_ctranslate2(
    engines, hassil, snapping, spoken, voice, wpm, entities
):
    audio = espeak(spoken, voice, wpm)
    decided = {}
    for name in ("ct2", "torch"):
        transcript = engines[name].transcribe(audio)
        heard = transcript.data["hypotheses"]
        assert all(snapping.recognize(h["text"]) is None for h in heard), heard  # a real slip
        assert transcript.data["decision"]["step"] == "rescore", transcript.data
        intent = hassil.recognize(transcript.text)
        assert intent is not None and intent.data["entities"] == entities, transcript.text
        decided[name] = transcript.text.lower()
    assert decided["torch"] == decided["ct2"]


@pytest.mark.parametrize(
    "chatter",
    [
        "the weather in the garden was lovely this morning",
        "is the coffee ready yet",
        "my brother wants to paint his bedroom blue",
    ],
)
def test_chatter_stays_chatter_through_every_step(engines, hassil, chatter):
    transcript = engines["torch"].transcribe(espeak(chatter, "en-us", 160))
    assert transcript.text
    assert hassil.recognize(transcript.text) is None, transcript.text
    assert "text" not in transcript.data.get("rescored", {})
    steps = [s["step"] for s in transcript.data["decision"]["steps"]]
    assert steps[:3] == ["first", "fallback", "rescore"] and "retry" in steps


def test_the_draft_runs_the_first_reading_only(engines):
    transcript = engines["torch"].draft(espeak("close the living room blinds", "en-us", 175))
    assert [s["step"] for s in transcript.data["decision"]["steps"]] == ["first"]
    assert "rescored" not in transcript.data


@pytest.mark.parametrize("window", [5, 30])
def test_a_window_is_encoded_as_ctranslate2_encodes_it(engines, window):
    """A fitted window (the audio padded with silence) and the full one (the audio's features
    padded with zeros, as faster-whisper's): the encoder's output of CTranslate2 in float32.
    The prompted retry and the second look read the full window: were it padded otherwise,
    the engines would hear a misheard command differently there."""
    samples = pcm16_to_float(steady_piper("Turn on the kitchen lights."))
    torch = engines["torch"].encode(samples, window).numpy()
    ct2_float32 = np.asarray(engines["ct2 float32"].encode(samples, window))
    assert torch.shape == ct2_float32.shape == (1, window * 50, 384)
    assert np.abs(torch - ct2_float32).max() <= 0.01


def scored(engine, audio: bytes, texts: list[str]) -> list[float]:
    samples = pcm16_to_float(audio)
    encoded = engine.encode(samples, 5)
    return engine.forced_scores(encoded, "en", texts, int(len(samples) / 160) + 1)


SENTENCES = [
    "Turn on the kitchen lights.",
    "turn on the kitchen lights",
    "Turn off the kitchen lights.",
    "Turn on the bedroom lights.",
    "Turn on the kitchen light.",
    "Open the garage door.",
    "What is the weather like?",
]


def test_forced_scores_are_ctranslate2s_and_rank_sentences_as_its_int8_does(engines):
    """Equal to CTranslate2's float32 scores (within 0.01 a token), and seven sentences in
    the order CTranslate2's int8 scores put them (its scores differ by up to 0.8: measured)."""
    audio = steady_piper("Turn on the kitchen lights.")
    torch = np.array(scored(engines["torch"], audio, SENTENCES))
    ct2_float32 = np.array(scored(engines["ct2 float32"], audio, SENTENCES))
    ct2_int8 = np.array(scored(engines["ct2"], audio, SENTENCES))
    assert np.abs(torch - ct2_float32).max() <= 0.01, (torch, ct2_float32)
    assert list(np.argsort(-torch)) == list(np.argsort(-ct2_int8)), (torch, ct2_int8)
    assert int(np.argmax(torch)) == 0


def test_the_next_token_after_each_prefix_is_ctranslate2s(engines):
    """The constrained search's question, batched over prefixes of different lengths: the
    log-probabilities of CTranslate2 in float32 (within 0.01), the likeliest token of its
    int8 after each prefix (the said one)."""
    samples = pcm16_to_float(steady_piper("Turn on the kitchen lights."))
    tokenizer = engines["ct2"].tokenizer("en")
    said = tokenizer.encode(" Turn on the kitchen lights.")
    prompt = [*tokenizer.sot_sequence, tokenizer.no_timestamps]
    prefixes = [tuple(said[:n]) for n in range(len(said))]
    rows = {}
    for name, engine in engines.items():
        rows[name] = engine.next_logprobs(engine.encode(samples, 5))(prompt, prefixes)
    for prefix, torch, ct2_float32, ct2_int8 in zip(
        prefixes, rows["torch"], rows["ct2 float32"], rows["ct2"], strict=True
    ):
        assert torch.shape == ct2_float32.shape == ct2_int8.shape
        assert np.abs(torch - ct2_float32).max() <= 0.01
        assert int(np.argmax(torch)) == int(np.argmax(ct2_int8)) == said[len(prefix)]
    assert np.exp(rows["torch"][0]).sum() == pytest.approx(1.0, abs=1e-3)


def test_audio_longer_than_one_window_is_transcribed_whole(engines):
    sentence = "Remind me to call my mother tomorrow evening."
    audio = steady_piper(sentence) + silence(28.0) + steady_piper("Turn off the radio.")
    transcript = engines["torch"].transcribe(audio)
    assert transcript.data["long_form"] is True
    assert transcript.audio_seconds > 30
    assert "mother" in transcript.text.lower() and "radio" in transcript.text.lower()
