"""A Piper voice's memory stays flat however many different sentences it says (#16).

ONNX Runtime's memory patterns plan and keep one allocation layout per input shape; a voice
sees a new shape with nearly every sentence (its phoneme count, and output lengths that
depend on the predicted durations), so with patterns on, a daemon's RSS grew with what it
had said (6-7 % over a 10-minute soak after warm-up).
"""

from __future__ import annotations

from voiced_plugins.tts_piper import PiperOptions, PiperTts, session_options


def test_voice_sessions_plan_no_memory_pattern_per_input_shape() -> None:
    assert session_options().enable_mem_pattern is False


def test_the_loaded_voice_runs_with_those_options() -> None:
    tts = PiperTts(PiperOptions())
    tts.load()
    try:
        assert tts._voice.session.get_session_options().enable_mem_pattern is False
    finally:
        tts.close()
