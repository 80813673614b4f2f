"""The grammar search's next-token steps and the rescoring's teacher-forced scores in numpy
(ct2_steps.py): Whisper's decoder with the audio's keys and values shared by the beam and
each reading's own kept between steps.

On real speech (Piper) and the bundled tiny.en, its log-probabilities are CTranslate2's own
(float32: the same numbers; the default int8 differs by int8's rounding), however the beam
grows, and the engine uses it on the CPU whenever its profile searches.
"""

from __future__ import annotations

import logging
import shutil

import numpy as np
import pytest
from speech import steady_piper
from voiced_plugins.asr_whisper.common import pcm16_to_float
from voiced_plugins.asr_whisper.ct2 import WhisperCt2Asr, WhisperCt2Options
from voiced_plugins.asr_whisper.ct2_scoring import forced_scores, next_logprobs
from voiced_plugins.asr_whisper.ct2_steps import StepDecoder
from voiced_plugins.asr_whisper.models import resolve_ct2

pytestmark = pytest.mark.slow  # loads tiny.en twice and speaks with Piper

LIKELY = -10.0
"""Tokens compared: those CTranslate2 gives at least this log-probability (the search prunes
far above it; far below, float32's rounding of a near-zero probability is all that differs)."""


@pytest.fixture(scope="module")
def float32_engine():
    engine = WhisperCt2Asr(WhisperCt2Options(compute_type="float32", warmup=False))
    engine.load()
    yield engine
    engine.close()


@pytest.fixture(scope="module")
def window(float32_engine):
    """'Set the kitchen light to 40 percent.' as tiny.en encodes it, in a 5 s window (Piper
    without its sampling noise: the scores below are bounds on this audio, not on a draw)."""
    samples = pcm16_to_float(steady_piper("Set the kitchen light to 40 percent."))
    return float32_engine.encode(samples, 5)


def grown(engine, steps, words: str, width: int = 6):
    """Each step of the beam as the search grows it: the spoken words' tokens, and beside
    them the likeliest other tokens after the same prefix; (prompt, prefixes) per step."""
    tokenizer = engine.tokenizer(None)
    prompt = [*tokenizer.sot_sequence, tokenizer.no_timestamps]
    said = tokenizer.encode(" " + words)
    asked, prefixes = [], [()]
    for n in range(len(said)):
        asked.append(list(prefixes))
        rows = steps(prompt, prefixes)
        others = [int(t) for t in np.argsort(rows[0])[::-1][:width] if t != said[n]]
        prefixes = [tuple(said[: n + 1])] + [(*prefixes[0], t) for t in others[: width - 1]]
    return prompt, asked


@pytest.mark.parametrize("threads", [1, 3])
def test_the_steps_give_ctranslate2s_own_logprobs(float32_engine, window, threads):
    """On one thread or the vocabulary's logits in parts on several (3: parts of unequal size)."""
    decoder = StepDecoder.of_model(resolve_ct2("bundled:tiny.en")[0], threads)
    steps = decoder.steps(np.asarray(window))
    reference = next_logprobs(float32_engine._model.model, window)
    prompt, asked = grown(float32_engine, steps, "Set the kitchen light to 40 percent.")
    steps = decoder.steps(np.asarray(window))  # afresh: the same questions, in the same order
    for prefixes in asked:
        mine, theirs = steps(prompt, prefixes), reference(prompt, prefixes)
        for row, expected in zip(mine, theirs, strict=True):
            likely = expected > LIKELY
            assert np.abs(row[likely] - expected[likely]).max() < 2e-3
            assert int(np.argmax(row)) == int(np.argmax(expected))
    decoder.close()


def test_teacher_forced_scores_are_ctranslate2s_align(float32_engine, window):
    """The rescoring's scores of the home's sentences, their shared beginnings decoded once."""
    texts = [
        "Set the kitchen light to 40 percent.",
        "set the kitchen light to 40 percent",
        "Set the kitchen lights to 40%.",
        "turn on the kitchen light",
        "what time is it",
    ]
    tokenizer = float32_engine.tokenizer(None)
    decoder = StepDecoder.of_model(resolve_ct2("bundled:tiny.en")[0])
    prompt = [*tokenizer.sot_sequence, tokenizer.no_timestamps]
    tokens = [tokenizer.encode(" " + t) for t in texts]
    mine = decoder.forced(np.asarray(window), prompt, tokens, tokenizer.eot)
    theirs = forced_scores(float32_engine._model.model, tokenizer, window, texts, 250)
    assert max(abs(a - b) for a, b in zip(mine, theirs, strict=True)) < 2e-3, (mine, theirs)
    assert list(np.argsort(mine)) == list(np.argsort(theirs))
    assert theirs[0] > -0.6 and theirs[-1] < -3  # what was said, and what was not


def test_a_reading_not_grown_from_the_last_step_or_of_another_length_is_read_alike(
    float32_engine, window
):
    decoder = StepDecoder.of_model(resolve_ct2("bundled:tiny.en")[0])
    prompt, asked = grown(float32_engine, decoder.steps(np.asarray(window)), "Set the kitchen")
    in_order = decoder.steps(np.asarray(window))
    rows = [in_order(prompt, prefixes) for prefixes in asked]
    out_of_order = decoder.steps(np.asarray(window))  # the last step asked first, alone
    late = out_of_order(prompt, asked[-1])
    for row, expected in zip(late, rows[-1], strict=True):
        assert np.allclose(row, expected, atol=1e-4)
    mixed = decoder.steps(np.asarray(window))  # prefixes of every length in one call
    together = mixed(prompt, [prefixes[0] for prefixes in asked])
    for row, expected in zip(together, [step[0] for step in rows], strict=True):
        assert np.allclose(row, expected, atol=1e-4)


def test_the_cpu_engine_searches_with_the_steps_when_its_profile_searches(float32_engine, window):
    searching = WhisperCt2Asr(WhisperCt2Options(warmup=False))
    free = WhisperCt2Asr(WhisperCt2Options(warmup=False, recognition="free"))
    for engine in (searching, free):
        engine.load()
    try:
        assert isinstance(searching._steps, StepDecoder)
        assert free._steps is None  # no search, no decoder weights held
        # align (CTranslate2's threads) beside the numpy steps; in float32 both are numpy
        assert searching.scores_beside_steps and not float32_engine.scores_beside_steps
        # scores: int8 from align (the rescoring's limits were chosen on them), float32 alike
        tokenizer = searching.tokenizer(None)
        texts = ["Set the kitchen light to 40 percent.", "turn on the kitchen light"]
        int8 = searching.encode(
            pcm16_to_float(steady_piper("Set the kitchen light to 40 percent.")), 5
        )
        assert searching.forced_scores(int8, None, texts, 250) == forced_scores(
            searching._model.model, tokenizer, int8, texts, 250
        )
        mine = float32_engine.forced_scores(window, None, texts, 250)
        theirs = forced_scores(float32_engine._model.model, tokenizer, window, texts, 250)
        assert np.allclose(mine, theirs, atol=2e-3)
    finally:
        searching.close()
        free.close()


def test_a_model_without_float_weights_keeps_ctranslate2s_generate(tmp_path, caplog):
    model = tmp_path / "broken"
    shutil.copytree(resolve_ct2("bundled:tiny.en")[0], model)
    with open(model / "model.bin", "r+b") as data:
        data.truncate(4096)
    with caplog.at_level(logging.INFO, logger="voiced_plugins.asr_whisper.ct2_steps"):
        assert StepDecoder.of_model(model) is None
    assert "CTranslate2's generate" in caplog.text and "truncated" in caplog.text
