"""Who is speaking: the ge2e encoder on real speech, the voices file, the match rule,
enrollment's checks, permissions, and the ``voiced speakers`` command."""

from __future__ import annotations

import json
import os
import pickle
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from speech import espeak, noise, piper, silence
from voiced_plugins.speaker_ge2e.checkpoint import CheckpointError, read_checkpoint
from voiced_plugins.speaker_ge2e.encoder import Ge2eEncoder, Ge2eOptions

from voiced.audio import write_wav
from voiced.enrollment import Clip, EnrollmentError, voice_of
from voiced.intents import Intent
from voiced.permissions import PermissionRule, SpeakersConfig, check
from voiced.speaker_id import SpeakerId
from voiced.speakers import MatchRule, VoiceBook, VoiceBookError

ALICE = (  # the bundled Piper voice
    "Turn on the lights in the kitchen and set the heating to twenty one degrees.",
    "What is the weather going to be like tomorrow morning?",
    "Remind me to call my sister when I get home this evening.",
)
RULE = SpeakersConfig().rule()
FLOOR = RULE.alone + RULE.threshold


@pytest.fixture(scope="module")
def encoder() -> Ge2eEncoder:
    stage = Ge2eEncoder(Ge2eOptions())
    stage.load()
    return stage


@pytest.fixture(scope="module")
def alice_clips() -> list[Clip]:
    return [Clip(f"alice {i}", piper(text)) for i, text in enumerate(ALICE, 1)]


@pytest.fixture(scope="module")
def bob_clips() -> list[Clip]:
    return [Clip(f"bob {i}", espeak(text, "en-us+m3")) for i, text in enumerate(ALICE, 1)]


def vector(encoder: Ge2eEncoder, audio: bytes) -> np.ndarray:
    return encoder.embed(audio).vector


# -- the encoder --------------------------------------------------------------------------


def test_the_encoder_gives_unit_embeddings_closer_for_the_same_voice(encoder):
    a1 = vector(encoder, piper("Lock the front door please."))
    a2 = vector(encoder, piper("What time is it in the living room?"))
    b = vector(encoder, espeak("What time is it in the living room?", "en-us+f3"))
    assert a1.shape == (256,) and abs(float(np.linalg.norm(a1)) - 1.0) < 1e-5
    assert float(a1 @ a2) > float(a1 @ b) + 0.1


@pytest.mark.slow
def test_the_encoder_matches_resemblyzer_to_within_1e_5(encoder):
    torch = pytest.importorskip("torch")
    pytest.importorskip("librosa")
    resemblyzer = pytest.importorskip("resemblyzer")
    reference = resemblyzer.VoiceEncoder("cpu", verbose=False)
    torch.set_num_threads(1)
    for audio in (piper("Turn off the bedroom light."), espeak("Set a timer for ten minutes.")):
        wav = np.frombuffer(audio, "<i2").astype(np.float32) / 32768.0
        expected = reference.embed_utterance(resemblyzer.preprocess_wav(wav))
        assert np.abs(vector(encoder, audio) - expected).max() < 1e-5


def test_the_torch_network_a_gpu_runs_equals_the_numpy_one():
    pytest.importorskip("torch")
    from voiced_plugins.speaker_ge2e.encoder import bundled_weights
    from voiced_plugins.speaker_ge2e.network import NumpyEncoder, TorchEncoder

    weights = read_checkpoint(bundled_weights())["model_state"]
    mels = np.random.default_rng(1).gamma(1.0, 0.5, (2, 160, 40)).astype(np.float32)
    on_torch = TorchEncoder(weights, "cpu")(mels)  # the GPU's code path, on the CPU here
    assert np.abs(on_torch - NumpyEncoder(weights)(mels)).max() < 1e-5


def test_silence_has_no_voice_to_tell(encoder):
    from voiced.api.stages import NoVoice

    with pytest.raises(NoVoice):
        encoder.embed(silence(3.0))


def test_the_checkpoint_reader_refuses_a_pickle_that_names_other_code(tmp_path):
    class Evil:
        def __reduce__(self):
            return (os.system, ("echo pwned",))

    path = tmp_path / "evil.pt"
    with path.open("wb") as file:
        for part in (0x1950A86A20F9469CFC6C, 1001, {}):
            pickle.dump(part, file, protocol=2)
        pickle.dump(Evil(), file, protocol=2)
    with pytest.raises(CheckpointError, match="unexpected class"):
        read_checkpoint(path)


# -- the voices file and the match rule ---------------------------------------------------


def test_the_voices_file_holds_embeddings_only_readable_by_its_owner(tmp_path, encoder):
    path = tmp_path / "state" / "speakers.json"
    book = VoiceBook.open(path, "ge2e")
    book.enroll("Alice", [vector(encoder, piper(ALICE[0]))])
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    data = json.loads(path.read_text())
    assert set(data["voices"]["alice"]) == {"embedding", "utterances", "enrolled"}
    assert len(data["voices"]["alice"]["embedding"]) == 256
    assert VoiceBook.open(path, "ge2e").names() == ["alice"]


@pytest.mark.parametrize(
    "content, message",
    [
        ("{not json", "not a readable voices file"),
        ('{"format": "other"}', "not a voices file"),
        ('{"format": "voiced-speakers/1", "model": "ecapa", "voices": {}}', "enroll again"),
        ('{"format": "voiced-speakers/1", "model": "ge2e", "voices": {"a": {}}}', "voice 'a'"),
        (
            '{"format": "voiced-speakers/1", "model": "ge2e", "voices": '
            '{"a": {"embedding": [0, 0]}}}',
            "non-zero",
        ),
    ],
)
def test_a_corrupted_voices_file_is_a_clear_error(tmp_path, content, message):
    path = tmp_path / "speakers.json"
    path.write_text(content)
    with pytest.raises(VoiceBookError, match=message):
        VoiceBook.open(path, "ge2e")


def test_the_closest_voice_is_named_only_with_a_margin_over_the_runner_up():
    rule = MatchRule(threshold=0.05, stranger=0.3, alone=0.6)
    assert rule.score(0.9, 0.5) == pytest.approx(0.4)
    assert rule.score(0.9, 0.1) == pytest.approx(0.6)  # the runner-up counts as a stranger
    assert rule.score(0.9, None) == pytest.approx(0.3)  # one voice enrolled
    book = VoiceBook(Path("/nonexistent"), "ge2e")
    book.voices = {"a": np.array([1.0, 0.0], np.float32), "b": np.array([0.0, 1.0], np.float32)}
    assert book.identify([0.9, 0.1], rule).name == "a"
    tie = book.identify([1.0, 0.95], rule)
    assert (tie.name, tie.closest) == ("unknown", "a")


def test_an_enrolled_voice_is_told_from_another_on_new_sentences(tmp_path, encoder, alice_clips):
    book = VoiceBook.open(tmp_path / "speakers.json", "ge2e")
    book.enroll("alice", [v.vector for v in voice_of(alice_clips, encoder, FLOOR)])
    bob = [Clip(f"bob {i}", espeak(t, "en+f3")) for i, t in enumerate(ALICE)]
    book.enroll("bob", [v.vector for v in voice_of(bob, encoder, FLOOR)])
    heard = book.identify(vector(encoder, piper("Unlock the front door.")), RULE)
    assert heard.name == "alice", heard
    other = book.identify(vector(encoder, espeak("Unlock the front door.", "en+f3")), RULE)
    assert other.name == "bob", other


def test_a_corrupted_voices_file_leaves_every_speaker_unknown_and_says_why(tmp_path, encoder):
    config = SpeakersConfig(file=str(tmp_path / "speakers.json"))
    (tmp_path / "speakers.json").write_text("\x00garbage")
    speakers = SpeakerId("ge2e", encoder, config)
    speakers.load()
    assert speakers.disabled is not None and "without speaker checks" in speakers.disabled
    assert speakers.identify(piper("Unlock the front door.")).name == "unknown"


# -- enrollment's checks --------------------------------------------------------------------


def test_enrollment_takes_three_clips_of_one_voice(encoder, alice_clips):
    assert len(voice_of(alice_clips, encoder, FLOOR)) == 3


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda a: a[:32000], "1.0 s is too short"),
        (lambda a: silence(4.0), "silence"),
        (lambda a: noise(4.0, level=0.1), "only noise"),
    ],
    ids=["one-second clip", "silence", "noise only"],
)
def test_enrollment_refuses_a_bad_clip_with_a_clear_error(encoder, alice_clips, make, message):
    clips = [alice_clips[0], Clip("clip 2", make(alice_clips[1].audio)), alice_clips[2]]
    with pytest.raises(EnrollmentError, match=message) as error:
        voice_of(clips, encoder, FLOOR)
    assert "clip 2" in str(error.value)


def test_enrollment_refuses_clips_of_two_people(encoder, alice_clips, bob_clips):
    clips = [alice_clips[0], bob_clips[1], alice_clips[2]]
    with pytest.raises(EnrollmentError, match="does not sound like the other clips"):
        voice_of(clips, encoder, FLOOR)


def test_enrollment_refuses_a_clip_where_two_people_speak(encoder, alice_clips, bob_clips):
    both = Clip("clip 2", alice_clips[1].audio + silence(0.3) + bob_clips[2].audio)
    with pytest.raises(EnrollmentError, match="more than one voice"):
        voice_of([alice_clips[0], both, alice_clips[2]], encoder, FLOOR)


# -- permissions ----------------------------------------------------------------------------


def unlock() -> Intent:
    data = {"entities": ["lock.front_door"], "context": {"domain": "lock"}}
    return Intent("HassTurnOff", {"name": "Front Door"}, "unlock the front door", data=data)


def test_without_rules_everyone_may_do_everything():
    assert check([], unlock(), "unknown") is None


@pytest.mark.parametrize(
    "rule",
    [
        {"entity": "lock.front_door", "allow": ["Alice"]},
        {"domain": "lock", "allow": ["alice"]},
        {"intent": "HassTurnOff", "domain": "lock", "allow": ["alice"]},
    ],
)
def test_a_rule_on_an_entity_domain_or_intent_limits_it_to_the_people_it_names(rule):
    rules = [PermissionRule(**rule)]
    assert check(rules, unlock(), "alice") is None
    refusal = check(rules, unlock(), "bob")
    assert refusal is not None and refusal.speaker == "bob"
    assert check(rules, unlock(), None) is not None  # nobody told: unknown
    other = Intent("HassTurnOn", {"name": "Kitchen Light"}, data={"entities": ["light.kitchen"]})
    assert check(rules, other, "bob") is None


def test_unknown_and_anyone_can_be_allowed():
    assert check([PermissionRule(domain="lock", allow=["unknown"])], unlock(), None) is None
    assert check([PermissionRule(domain="lock", allow=["anyone"])], unlock(), "bob") is None


def test_a_rule_must_name_what_it_limits():
    with pytest.raises(ValueError, match="needs an intent, a domain or an entity"):
        PermissionRule(allow=["alice"])


# -- the command line -----------------------------------------------------------------------


def voiced(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "STATE_DIRECTORY": str(tmp_path / "state")}
    env = {k: v for k, v in env.items() if not k.startswith("VOICED_")}
    return subprocess.run(
        [sys.executable, "-m", "voiced.cli", "--config", str(tmp_path / "none.toml"), *args],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip


@pytest.mark.slow
def test_voiced_speakers_enrolls_from_wav_files_lists_and_forgets(tmp_path, alice_clips):
    (tmp_path / "none.toml").write_text("")
    files = []
    for i, clip in enumerate(alice_clips):
        files.append(str(tmp_path / f"{i}.wav"))
        write_wav(files[-1], clip.audio)
    enrolled = voiced(tmp_path, "speakers", "enroll", "Alice", "--wav", *files)
    assert enrolled.returncode == 0, enrolled.stderr
    store = tmp_path / "state" / "speakers.json"
    assert stat.S_IMODE(store.stat().st_mode) == 0o600
    assert not list((tmp_path / "state").glob("*.wav"))
    assert voiced(tmp_path, "speakers", "list").stdout.startswith("alice\t3 utterances")
    short = tmp_path / "short.wav"
    write_wav(str(short), alice_clips[0].audio[:32000])
    refused = voiced(tmp_path, "speakers", "enroll", "bob", "--wav", str(short), *files[1:])
    assert refused.returncode == 1 and "too short" in refused.stderr
    assert voiced(tmp_path, "speakers", "forget", "alice").returncode == 0
    gone = voiced(tmp_path, "speakers", "forget", "alice")
    assert gone.returncode == 1 and "nobody called 'alice'" in gone.stderr


def test_doctor_names_the_weights_and_a_voices_file_it_cannot_read(tmp_path):
    from voiced_plugins.speaker_ge2e.doctor import speaker_checks

    from voiced.config import Settings

    (tmp_path / "speakers.json").write_text("[1, 2")
    config = Settings(
        pipeline={"speaker": ["ge2e"]}, speakers={"file": str(tmp_path / "speakers.json")}
    )
    weights, voices = speaker_checks(config)
    assert weights.ok and weights.detail.endswith("pretrained.pt")
    assert voices.ok is False and "not a readable voices file" in voices.detail
    assert "enroll" in voices.fix
    assert speaker_checks(Settings()) == []  # no speaker stage configured: nothing to check


# -- a run: the speaker beside ASR, on the events, and the permission check ------------------


@pytest.fixture
def small_app(tmp_path, encoder, alice_clips):
    from wyoming_assistant import ScriptedAsr, SmallAssistant

    unlock_intent = unlock()
    app = SmallAssistant(
        ScriptedAsr("unlock the front door"),
        intents={"unlock the front door": unlock_intent},
        handles={"HassTurnOff": "Unlocked."},
    )
    config = SpeakersConfig(
        file=str(tmp_path / "speakers.json"),
        permissions=[PermissionRule(entity="lock.front_door", allow=["alice"])],
    )
    app.settings.speakers = config
    VoiceBook.open(tmp_path / "speakers.json", "ge2e").enroll(
        "alice", [v.vector for v in voice_of(alice_clips, encoder, FLOOR)]
    )
    app.speakers = SpeakerId("ge2e", encoder, config)
    app.speakers.book = VoiceBook.open(tmp_path / "speakers.json", "ge2e")
    app.speakers.disabled = None
    yield app
    app.close()


async def answer_to(app, audio: bytes):
    from voiced.run import Phase

    run = app.start_run("kitchen", "speech", phase=Phase.THINKING)
    run.identify(audio)
    transcript = await run.transcribe(audio)
    return run, await run.answer(transcript)


async def test_an_allowed_speaker_is_handled_and_named_on_the_events(small_app):
    run, response = await answer_to(small_app, piper("Unlock the front door."))
    assert response.speech == "Unlocked."
    assert run.context.speaker == "alice" and run.context.data["speaker"]["name"] == "alice"
    (transcript,) = small_app.of("transcript")
    (intent,) = small_app.of("intent")
    assert transcript.data["speaker"] == intent.data["speaker"] == "alice"
    assert isinstance(transcript.data["speaker_score"], float)
    assert small_app.of("intent-refused") == []


async def test_a_stranger_is_refused_with_the_spoken_answer_and_an_event(small_app):
    run, response = await answer_to(small_app, espeak("Unlock the front door.", "en-us+m3"))
    assert (response.speech, response.handler) == (
        SpeakersConfig().refused_unknown,
        "permissions",
    )
    (refused,) = small_app.of("intent-refused")
    assert refused.run_id == run.run_id
    assert (refused.data["name"], refused.data["speaker"]) == ("HassTurnOff", "unknown")
    assert refused.data["allow"] == ["alice"]
    assert small_app.of("handled") == []  # the handlers were never asked


async def test_a_run_without_audio_is_unknown_to_the_rules(small_app):
    from voiced.intents import Transcript
    from voiced.run import Phase

    run = small_app.start_run("kitchen", "request", phase=Phase.THINKING)
    response = await run.answer(Transcript("unlock the front door"))
    assert response.handler == "permissions" and run.context.speaker is None
    assert "speaker" not in small_app.of("intent")[0].data


@pytest.mark.slow
def test_voiced_speakers_enroll_records_the_guided_sentences_from_a_source(tmp_path, alice_clips):
    (tmp_path / "none.toml").write_text("")
    recording = tmp_path / "mic.wav"
    write_wav(recording, silence(0.5) + silence(1.0).join(c.audio for c in alice_clips))
    done = voiced(tmp_path, "speakers", "enroll", "Dave", "--source", f"file:{recording}")
    assert done.returncode == 0, done.stderr
    prompts = [line for line in done.stdout.splitlines() if "say:" in line]
    assert len(prompts) == 3 and prompts[0].startswith("1/3  say: Turn on the lights")
    assert "enrolled dave from 3 clips" in done.stdout
    short = tmp_path / "short.wav"
    write_wav(short, silence(0.5) + alice_clips[0].audio + silence(1.0))
    ended = voiced(tmp_path, "speakers", "enroll", "erin", "--source", f"file:{short}")
    assert ended.returncode == 1 and "the source ended before sentence 2" in ended.stderr


def test_a_minimum_similarity_turns_away_a_close_voice_that_the_margin_would_name():
    book = VoiceBook(Path("/nonexistent"), "ge2e")
    book.voices = {"a": np.array([1.0, 0.0], np.float32), "b": np.array([0.0, 1.0], np.float32)}
    heard = [0.7, 0.3]  # cosine 0.92 with a, well ahead of b
    assert book.identify(heard, MatchRule(0.05, 0.3, 0.6)).name == "a"
    assert book.identify(heard, MatchRule(0.05, 0.3, 0.6, minimum=0.95)).name == "unknown"
