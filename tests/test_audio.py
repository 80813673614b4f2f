"""Audio at the edge: any readable file becomes 16 kHz mono 16-bit once; bad files say why."""

from __future__ import annotations

import itertools
import wave

import numpy as np
import pytest
import soundfile

from voiced.audio import (
    PIPELINE_FORMAT,
    AudioChunk,
    AudioFormat,
    AudioFormatError,
    StreamConverter,
    convert,
    read_pipeline_audio,
)


def sine(freq: float, seconds: float, rate: int) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    return (0.5 * np.sin(2 * np.pi * freq * t)).astype(np.float32)


def dominant_frequency(pcm: bytes, rate: int = 16000) -> float:
    samples = np.frombuffer(pcm, dtype="<i2").astype(np.float32)
    spectrum = np.abs(np.fft.rfft(samples))
    return float(np.fft.rfftfreq(len(samples), 1 / rate)[np.argmax(spectrum)])


def test_chunk_knows_its_duration():
    chunk = AudioChunk(b"\x00\x00" * 8000)
    assert chunk.samples == 8000
    assert chunk.seconds == pytest.approx(0.5)


def test_44k_stereo_wav_is_converted_to_16k_mono_keeping_pitch(tmp_path):
    path = tmp_path / "stereo.wav"
    left = sine(440, 1.0, 44100)
    soundfile.write(path, np.stack([left, left], axis=1), 44100, subtype="PCM_16")
    pcm = read_pipeline_audio(path)
    assert len(pcm) == pytest.approx(PIPELINE_FORMAT.bytes_per_second, rel=0.01)
    assert dominant_frequency(pcm) == pytest.approx(440, abs=2)


def test_8bit_wav_is_read_as_unsigned_and_converted(tmp_path):
    path = tmp_path / "u8.wav"
    samples = sine(300, 0.5, 8000)
    with wave.open(str(path), "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(1)
        wav.setframerate(8000)
        wav.writeframes(((samples * 127) + 128).astype(np.uint8).tobytes())
    pcm = read_pipeline_audio(path)
    assert len(pcm) == pytest.approx(16000, rel=0.01)  # 0.5 s at 16 kHz, 2 bytes each
    assert dominant_frequency(pcm) == pytest.approx(300, abs=3)
    level = np.abs(np.frombuffer(pcm, "<i2")).max() / 32768
    assert 0.3 < level < 0.6  # centred on zero, not offset by the unsigned bias


def test_24bit_and_float_wavs_are_supported(tmp_path):
    for subtype in ("PCM_24", "FLOAT"):
        path = tmp_path / f"{subtype}.wav"
        soundfile.write(path, sine(500, 0.25, 48000), 48000, subtype=subtype)
        assert dominant_frequency(read_pipeline_audio(path)) == pytest.approx(500, abs=5)


def test_empty_file_is_a_clear_error(tmp_path):
    path = tmp_path / "empty.wav"
    path.write_bytes(b"")
    with pytest.raises(AudioFormatError, match="empty"):
        read_pipeline_audio(path)


def test_wav_with_no_frames_is_a_clear_error(tmp_path):
    path = tmp_path / "noframes.wav"
    with wave.open(str(path), "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(16000)
    with pytest.raises(AudioFormatError, match="no audio frames"):
        read_pipeline_audio(path)


def test_truncated_header_is_a_clear_error(tmp_path):
    path = tmp_path / "truncated.wav"
    path.write_bytes(b"RIFF\x24\x00\x00\x00WAVEfmt ")
    with pytest.raises(AudioFormatError, match="not a readable audio file"):
        read_pipeline_audio(path)


def test_text_file_is_not_audio(tmp_path):
    path = tmp_path / "notes.wav"
    path.write_text("turn on the lights")
    with pytest.raises(AudioFormatError, match=str(path.name)):
        read_pipeline_audio(path)


def test_missing_file_names_the_path(tmp_path):
    with pytest.raises(AudioFormatError, match="no such file"):
        read_pipeline_audio(tmp_path / "missing.wav")


def test_stream_converter_matches_whole_file_conversion():
    fmt = AudioFormat(48000, 2, 2)
    stereo = np.stack([sine(1000, 1.0, 48000)] * 2, axis=1)
    pcm = (stereo * 32767).astype("<i2").tobytes()
    whole = convert(pcm, fmt)
    converter = StreamConverter(fmt)
    step = 4 * 960  # 20 ms of 48 kHz stereo 16-bit
    pieces = [converter.convert(pcm[i : i + step]) for i in range(0, len(pcm), step)]
    streamed = b"".join(pieces) + converter.convert(b"", last=True)
    assert abs(len(streamed) - len(whole)) <= 4
    assert dominant_frequency(streamed) == pytest.approx(1000, abs=2)


@pytest.mark.parametrize("fmt", [AudioFormat(16000, 2, 1), AudioFormat(48000, 2, 2)])
def test_chunks_that_split_a_frame_lose_no_sample(fmt):
    # Home Assistant streams HTTP body chunks as they come: any length, not whole frames
    pcm = (np.stack([sine(440, 0.5, fmt.rate)] * fmt.channels, axis=1) * 20000).astype("<i2")
    data = pcm.tobytes()
    whole = StreamConverter(fmt)
    expected = whole.convert(data) + whole.convert(b"", last=True)
    split = StreamConverter(fmt)
    cuts = [0, 1, 1001, 1002, 4097, 9999, len(data)]
    pieces = [split.convert(data[a:b]) for a, b in itertools.pairwise(cuts)]
    assert b"".join(pieces) + split.convert(b"", last=True) == expected


def test_unusable_format_is_rejected():
    with pytest.raises(AudioFormatError):
        StreamConverter(AudioFormat(16000, 2, 0))
