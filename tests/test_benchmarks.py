"""The benchmark tooling itself: WER, text normalization, the test set, the table."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import soundfile

from voiced.events import Event, EventType

# benchmarks/ is a folder of scripts in the checkout, not an installed package
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import testset
from benchmarks.__main__ import generic, json_mode, supported
from benchmarks.common import Row, asr_detail, format_table, percentile, slowest, stats
from benchmarks.e2e import intent_matches, run_timing, slow_step
from benchmarks.wer import edit_distance, normalize, number_words, word_error_rate

# -- normalization ----------------------------------------------------------------------------


def test_numbers_are_spelled_out_as_people_say_them():
    assert number_words(0) == "zero"
    assert number_words(21) == "twenty one"
    assert number_words(105) == "one hundred five"
    assert number_words(1250) == "one thousand two hundred fifty"


def test_normalize_drops_case_and_punctuation_and_spells_digits():
    assert normalize("Set a timer for 5 minutes.") == "set a timer for five minutes"
    assert normalize("Turn on the living-room lights!") == "turn on the living room lights"


def test_normalize_reads_times_percentages_decimals_and_contractions():
    assert normalize("Wake me at 7:05") == "wake me at seven oh five"
    assert normalize("It's 10:30") == "it is ten thirty"
    assert normalize("Set the lamp to 50%") == "set the lamp to fifty percent"
    assert normalize("What's the temperature? 21.5°") == (
        "what is the temperature twenty one point five degrees"
    )


# -- word error rate --------------------------------------------------------------------------


def test_wer_is_zero_when_only_formatting_differs():
    result = word_error_rate(["set a timer for five minutes"], ["Set a timer for 5 minutes."])
    assert result.wer == 0.0
    assert result.words == 6


def test_wer_counts_substitutions_deletions_and_insertions():
    # "the" deleted, "lights" -> "light", "please" inserted: 3 errors over 5 words
    result = word_error_rate(["turn on the kitchen lights"], ["turn on kitchen light please"])
    assert result.errors == 3
    assert result.wer == pytest.approx(3 / 5)


def test_wer_counts_nothing_heard_as_every_word_deleted():
    result = word_error_rate(["what time is it", "cancel the timer"], ["What time is it?", ""])
    assert result.errors == 3
    assert result.wer == pytest.approx(3 / 7)


def test_wer_from_jiwer_matches_the_plain_levenshtein():
    pytest.importorskip("jiwer")
    refs = ["turn off the living room lamp", "lock the front door", "what is the weather like"]
    hyps = ["turn off the living room land", "the plant floor", "watching the weather like"]
    with_jiwer = word_error_rate(refs, hyps)
    plain = word_error_rate(refs, hyps, use_jiwer=False)
    assert with_jiwer.engine == "jiwer" and plain.engine == "levenshtein"
    assert with_jiwer.errors == plain.errors


def test_edit_distance_of_words():
    assert edit_distance(["a", "b", "c"], ["a", "b", "c"]) == 0
    assert edit_distance(["a", "b", "c"], ["a", "x", "c", "d"]) == 2
    assert edit_distance([], ["a", "b"]) == 2


def test_wer_refuses_unpaired_sentences():
    with pytest.raises(ValueError, match="one hypothesis per reference"):
        word_error_rate(["a b"], [])


# -- the speech test set ----------------------------------------------------------------------


def test_testset_writes_real_speech_at_the_asked_rates_and_channels(tmp_path):
    variants = [
        testset.Variant("en-us", snr_db=10.0, rate=8000, channels=1, lead_s=0.5),
        testset.Variant("en-gb", snr_db=None, rate=44100, channels=2, lead_s=0.75),
    ]
    commands = ["turn on the kitchen lights", "what time is it"]
    manifest = testset.build(tmp_path, commands, variants, intents=False)

    assert json.loads((tmp_path / "manifest.json").read_text()) == manifest
    items = manifest["items"]
    assert [i["text"] for i in items] == commands
    for item, variant in zip(items, variants, strict=True):
        info = soundfile.info(str(tmp_path / item["file"]))
        assert (info.samplerate, info.channels) == (variant.rate, variant.channels)
        assert info.duration == pytest.approx(item["seconds"], abs=0.01)
        assert 0.5 < item["speech_s"] < item["seconds"] - variant.lead_s - variant.trail_s + 0.01
        data, _ = soundfile.read(str(tmp_path / item["file"]), always_2d=True)
        lead = data[: int((variant.lead_s - 0.05) * variant.rate)]  # before resampler ringing
        speech = data[int(variant.lead_s * variant.rate) :][: int(item["speech_s"] * variant.rate)]
        assert abs(speech).max() > 0.3  # normalized speech, not silence
        if variant.snr_db is None:
            assert abs(lead).max() < 0.001  # clean: silence before the speech
        else:
            assert abs(lead).max() > 0.01  # noise fills the silence too
    assert "intent" not in items[0]


def test_testset_reuses_cached_audio(tmp_path):
    variants = [testset.Variant("en-us", None, 16000, 1, 0.5)]
    first = testset.build(tmp_path, ["what time is it"], variants, intents=False)
    path = tmp_path / first["items"][0]["file"]
    stamp = path.stat().st_mtime_ns
    second = testset.build(tmp_path, ["what time is it"], variants, intents=False)
    assert second == first
    assert path.stat().st_mtime_ns == stamp


@pytest.mark.slow
def test_testset_takes_expected_intents_from_hassil_with_the_home(tmp_path):
    variants = [testset.Variant("en-us", None, 16000, 1, 0.5)] * 2
    manifest = testset.build(tmp_path, ["what time is it", "blorp the frobnicator"], variants)
    assert manifest["items"][0]["intent"] == {"name": "HassGetCurrentTime", "slots": {}}
    assert manifest["items"][1]["intent"] is None


def test_default_variants_mix_voices_noise_and_formats():
    variants = [testset.default_variant(i) for i in range(len(testset.COMMANDS))]
    assert {v.voice for v in variants} == set(testset.VOICES)
    assert {v.snr_db for v in variants} == set(testset.SNRS)
    assert {(v.rate, v.channels) for v in variants} == set(testset.FORMATS)


# -- reading runs -----------------------------------------------------------------------------


def test_latencies_are_measured_from_vad_end_to_each_step():
    def at(kind: str, mono: float, **data: object) -> Event:
        return Event(kind, "run", "bench", dict(data), mono=mono)

    run = {
        "vad-end": at(EventType.VAD_END, 10.0, stream_time=3.0, reason="silence"),
        "transcript": at(EventType.TRANSCRIPT, 10.2),
        "intent": at(EventType.INTENT, 10.25),
        "tts-audio": at(EventType.TTS_AUDIO, 10.7),
    }
    timing = run_timing(run, speech_end_stream=2.2)
    assert timing["to_transcript"] == pytest.approx(0.2)
    assert timing["to_intent"] == pytest.approx(0.25)
    assert timing["to_first_audio"] == pytest.approx(0.7)
    assert timing["speech_end_to_first_audio"] == pytest.approx(0.7 + 0.8)


def test_intent_match_needs_the_name_and_the_same_slots():
    expected = {"name": "HassStartTimer", "slots": {"minutes": 5}}
    assert intent_matches(expected, {"name": "HassStartTimer", "slots": {"minutes": "5"}})
    assert not intent_matches(expected, {"name": "HassStartTimer", "slots": {"minutes": 10}})
    assert not intent_matches(expected, {"name": "HassCancelTimer", "slots": {"minutes": 5}})
    assert not intent_matches(expected, None)
    assert intent_matches(None, None)


# -- the table --------------------------------------------------------------------------------


def test_stats_are_median_tail_percentiles_min_max_and_count():
    assert stats([3.0, 1.0, 2.0, 10.0]) == {
        "median": 2.5, "p90": None, "p99": None, "min": 1.0, "max": 10.0, "n": 4
    }  # fmt: skip
    with pytest.raises(ValueError):
        stats([])


def test_a_percentile_is_claimed_only_where_a_sample_lies_above_it():
    assert percentile([float(v) for v in range(1, 10)], 90) is None  # 9 samples: no p90
    assert percentile([float(v) for v in range(1, 11)], 90) == 9.0
    hundred = [float(v) for v in range(1, 101)]
    assert percentile(hundred, 90) == 90.0 and percentile(hundred, 99) == 99.0
    assert percentile(hundred[:99], 99) is None


def test_table_rows_say_p50_p90_p99_max_runs_and_peer():
    row = Row.of("asr", "utterance -> text", "ms", stats([0.1, 0.2, 0.3]), peer="0.50x direct")
    tail = Row.of("e2e", "speech end -> audio", "ms", stats([i / 100 for i in range(1, 21)]))
    table = format_table([row, Row("e2e", "WER, all files", "%", 12.5, runs=26), tail])
    lines = table.splitlines()
    head = ["area", "measurement", "p50", "p90", "p99", "max", "unit", "runs", "vs peer / note"]
    assert [c.strip() for c in lines[0].split("|")[1:-1]] == head
    cells = [[c.strip() for c in line.split("|")[1:-1]] for line in lines[2:]]
    assert cells[0][2:8] == ["200", "-", "-", "300", "ms", "3"]
    assert "0.50x direct" in cells[0][8]
    assert cells[1][2] == "12.5" and cells[1][7] == "26"
    assert cells[2][2:6] == ["105", "180", "-", "200"]


def test_an_empty_table_still_prints_its_header():
    assert format_table([]).splitlines()[0].split("|")[1].strip() == "area"


def test_the_slowest_files_name_the_step_and_what_the_recognizer_did():
    record = {
        "hypothesis": {"why": "second look: a home command"},
        "retry_hypotheses": [{}, {}],
        "timings_ms": {"total": 2400.0},
    }
    results = [
        {"file": "quick.wav", "to_transcript": 0.2, "to_intent": 0.25, "to_first_audio": 0.3,
         "speech_end_to_first_audio": 0.9},
        {"file": "slow.wav", "to_transcript": 2.5, "to_intent": 2.6, "to_first_audio": 2.7,
         "speech_end_to_first_audio": 3.3, "asr_record": record},
        {"file": "lost.wav"},
    ]  # fmt: skip
    lines = slowest(results, "speech_end_to_first_audio", slow_step, count=5)
    assert len(lines) == 2 and lines[0].startswith("slow.wav: 3300 ms")
    assert "slowest step asr 2500 ms" in lines[0]
    assert "retried (2 hypotheses)" in lines[0] and "second look" in lines[0]
    assert "slowest step vad wait 600 ms" in lines[1]
    assert asr_detail({}) == "" and asr_detail({"timings_ms": "odd"}) == ""


def test_generic_rows_come_from_any_json_with_medians():
    data = {"results": [{"method": "raw paho", "latency_ms": {"median": 1.5, "min": 1, "max": 3}}]}
    rows, _notes = generic("mqtt", data)
    assert len(rows) == 1
    assert rows[0].what == "results / raw paho / latency_ms"
    assert (rows[0].median, rows[0].min, rows[0].max, rows[0].unit) == (1.5, 1, 3, "ms")


def test_script_options_are_passed_only_when_the_script_knows_them():
    help_ = "usage: x [-h] [--runs RUNS] [--json]\n  --runs RUNS  how many\n  --json  print JSON"
    assert supported(["--runs", "3", "--quick", "--engines", "ct2"], help_) == ["--runs", "3"]
    assert json_mode(help_) == "stdout"
    assert json_mode("usage: x [--json FILE]") == "file"
    assert json_mode("usage: x [--repeat N]") == "none"


def test_json_in_the_shape_of_a_section_is_read_as_rows():
    data = {
        "rows": [{"area": "wyoming", "what": "end of speech -> transcript", "unit": "ms",
                  "median": 185.0, "min": 140.0, "max": 231.0, "runs": 2, "peer": "6.6x"}],
        "notes": ["tiny.en"],
    }  # fmt: skip
    rows, notes = generic("wyoming", data)
    assert [(r.what, r.median, r.runs, r.peer) for r in rows] == [
        ("end of speech -> transcript", 185.0, 2, "6.6x")
    ]
    assert notes == ["tiny.en"]


def test_a_printed_mqtt_table_becomes_rows_with_the_paho_ratio():
    from benchmarks.__main__ import mqtt_text

    text = (
        "mosquitto on 127.0.0.1, QoS 1, 10000 events for throughput, 1000 spaced 2.0 ms\n"
        "publisher                   events/s     call us      p50 ms      p95 ms      p99 ms\n"
        "voiced mqtt service           6000.0         4.6        0.35        1.50        2.57\n"
        "raw paho loop (peer)          8000.0        22.0        0.28        2.38        4.09\n"
    )
    rows = mqtt_text(text)
    rate = next(r for r in rows if r.what == "events/s published: voiced mqtt service")
    assert (rate.median, rate.peer) == (6000.0, "0.75x raw paho")
    latency = next(r for r in rows if r.what.startswith("emit -> subscriber latency p50: voiced"))
    assert (latency.median, latency.runs) == (0.35, 1000)


def test_the_remote_table_compares_on_and_off_per_path_from_the_same_files():
    from benchmarks.e2e_remote import rows

    def result(reason: str, seconds: float) -> dict:
        return {"reason": reason, "intent_ok": True, "wyoming_first_audio": seconds,
                "mqtt_tts_start": seconds, "mqtt_tts_audio": seconds + 0.001}  # fmt: skip

    early, waited = "early-commit", "silence"
    table = rows(
        {
            True: [result(early, 0.4), result(waited, 1.0), result(early, 0.5)],
            False: [result(waited, 0.9), result(waited, 1.1), result(waited, 1.0)],
        }
    )
    ratios = {r.what: r for r in table if r.unit == "x"}
    wyoming = ratios[
        "early commit on / off: Wyoming satellite: speech end -> first answer audio-chunk "
        "(medians, same run)"
    ]
    assert wyoming.median == round(0.5 / 1.0, 3)
    assert "committed early 2/3" in wyoming.note
    early = ratios[
        "early commit on / off, the files it committed early: Wyoming satellite: speech end -> "
        "first answer audio-chunk"
    ]
    assert early.median == round(0.45 / 0.95, 3) and early.runs == 2  # files 1 and 3, paired
    assert len(ratios) == 6  # both kinds for Wyoming, tts-start and tts-audio


# -- the runner survives its scripts --------------------------------------------------------

FINE = """
import argparse, json
parser = argparse.ArgumentParser()
parser.add_argument("--json", metavar="FILE")
args = parser.parse_args()
row = {"area": "fine", "what": "a figure that finished", "unit": "ms", "median": 42.0,
       "max": 50.0, "runs": 3}
open(args.json, "w").write(json.dumps({"name": "fine", "rows": [row], "notes": []}))
"""
RAISES = """
import argparse
argparse.ArgumentParser().parse_args()
raise RuntimeError("the microphone caught fire")
"""
OVERRUNS = """
import argparse, time
argparse.ArgumentParser().parse_args()
time.sleep(120)
"""


def test_a_script_that_raises_and_one_that_overruns_leave_the_table_with_the_rest(tmp_path):
    scripts = []
    for name, text in (("boom", RAISES), ("fine", FINE), ("slow", OVERRUNS)):
        (tmp_path / f"{name}.py").write_text(text)
        scripts += ["--script", f"{name}={tmp_path / name}.py"]
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--only", "boom,fine,slow", "--budget", "12",
         *scripts],
        cwd=Path(__file__).resolve().parent.parent,
        capture_output=True,
        text=True,
        timeout=90,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "| fine " in out and "a figure that finished" in out and "| 42.0 " in out
    assert "Did not finish:" in out
    assert re.search(r"- boom: raised after \d+ s: exit 1: .*the microphone caught fire", out)
    assert re.search(r"- slow: overran after \d+ s: stopped at its budget of \d+ s", out)


def test_the_pool_cost_model_shares_the_cores_among_the_jobs_in_progress():
    from benchmarks.pool_rooms import interleaved_burst, shared_cores_burst

    one_core_each = [(1.0, 1.0)] * 4  # (c, c1): the engine's threads do not help
    assert shared_cores_burst(one_core_each, 1, 2) == [1.0, 2.0, 3.0, 4.0]
    assert shared_cores_burst(one_core_each, 2, 2) == [1.0, 1.0, 2.0, 2.0]
    assert shared_cores_burst(one_core_each, 3, 2) == pytest.approx([1.5, 1.5, 1.5, 2.5])
    # the local engine interleaves its utterances; a worker takes them one at a time, so
    # cheap jobs queued behind a costly one wait for it (head-of-line blocking)
    costly_first = [(10.0, 10.0), (1.0, 1.0), (1.0, 1.0), (1.0, 1.0)]
    assert interleaved_burst(costly_first, 2) == pytest.approx([4.0, 4.0, 4.0, 13.0])
    assert shared_cores_burst(costly_first, 1, 2) == pytest.approx([10.0, 11.0, 12.0, 13.0])
    two_threads = [(0.5, 1.0)] * 2  # the engine's two threads halve a job alone
    assert shared_cores_burst(two_threads, 1, 2) == pytest.approx([0.5, 1.0])
    assert shared_cores_burst(two_threads, 2, 2) == pytest.approx([1.0, 1.0])


@pytest.mark.slow
def test_the_idle_benchmark_listens_through_a_real_site_and_reports_its_rows(tmp_path):
    result = tmp_path / "idle.json"
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.idle_cpu", "--seconds", "10",
         "--json", str(result)],
        cwd=Path(__file__).resolve().parent.parent, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    measured = {row["what"] for row in json.loads(result.read_text())["rows"]}
    assert "CPU, peer: VAD-only listening (webrtc)" in measured
    assert any(m.startswith("wake fires after the end of") for m in measured)


@pytest.mark.slow
def test_the_wake_benchmark_reports_each_sensitivity_with_its_misses_and_false_wakes():
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.wake", "--per-word", "2", "--other", "3"],
        cwd=Path(__file__).resolve().parent.parent, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    levels = re.findall(r"(\w+) sensitive \(threshold (\d\.\d\d)\).*wake words heard (\d+)/6; "
                        r"false wakes (\d+)/3", proc.stdout)  # fmt: skip
    assert [(level, threshold) for level, threshold, _, _ in levels] == [
        ("slightly", "0.75"), ("moderately", "0.50"), ("very", "0.25")]  # fmt: skip
    heard = [int(h) for _, _, h, _ in levels]
    assert heard == sorted(heard)  # a lower threshold never hears fewer


# -- the languages benchmark's verdicts -------------------------------------------------------


def test_a_spoken_command_is_right_only_with_the_numbers_it_asked_for():
    from benchmarks import languages

    ten_minutes = languages._c("设置十分钟的计时器。", "HassStartTimer", minutes="10")
    assert languages.right(("HassStartTimer", {"minutes": 10}), ten_minutes)
    assert not languages.right(("HassStartTimer", {"minutes": 4}), ten_minutes)
    assert languages.right(("HassStartTimer", {"minutes": 10.0}), ten_minutes)
    assert not languages.right(None, ten_minutes)
    chatter = languages.Command("这本书我已经读完了。", None)
    assert languages.right(None, chatter) and not languages.right(("HassTurnOn", {}), chatter)


def test_the_languages_table_counts_commands_taken_for_another_action():
    from benchmarks import languages

    def row(right: bool, intent: object) -> dict:
        return {"command": True, "half": "report", "said": "打开台灯。", "voiced": "打开台灯",
                "peer": "", "voiced_right": right, "voiced_intent": intent, "voiced_ms": 900.0,
                "peer_right": False, "peer_intent": None, "peer_ms": 1000.0}  # fmt: skip

    rows = [row(True, ["HassTurnOn", {}]), row(False, ["HassStartTimer", {}]), row(False, None)]
    table = {r.what: r for r in languages.summary_rows(languages.MANDARIN, rows)}
    wrong = table["Mandarin commands taken for another action, voiced"]
    assert (wrong.median, wrong.runs, wrong.peer) == (1, 3, "faster-whisper + hassil 0")
