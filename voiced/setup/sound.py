"""The microphone and speaker questions: pick each, hear a 3 s recording back as voiced
hears it, and play a test sentence."""

from __future__ import annotations

from typing import Any

from voiced.setup import devices, hearing
from voiced.setup.answers import Answers
from voiced.setup.config_file import scratch_config
from voiced.setup.console import Console, SetupError
from voiced.setup.devices import Device

NONE = ("none", "-")


def ask_device(
    console: Console, found: list[Device], kind: str, given: str | None
) -> Device | None:
    """A microphone (``kind`` "input") or speaker ("output"); None when the answer is none."""
    word, flag = ("Microphone", "--microphone") if kind == "input" else ("Speaker", "--speaker")
    listed = devices.usable(found, kind)
    console.say(f"  {word.lower()}s found:" if listed else f"  no {word.lower()} found")
    for line in devices.describe(listed, kind):
        console.say("  " + line)
    default = devices.default_of(found, kind)

    def attempt(first: bool) -> Device | None:
        answer = console.ask(f"{word} (number or name; 'none' for no local {word.lower()})",
                             flag, given if first else None,
                             default.name if default else None)  # fmt: skip
        if answer.strip().lower() in NONE:
            return None
        return devices.pick(found, answer, kind)

    return console.until_valid(attempt)


def ask_sound(console: Console, answers: Answers, flags: Any) -> None:
    console.heading("Microphone and speaker")
    try:
        found = devices.audio_devices()
    except SetupError as exc:  # no PortAudio: satellites only, until it is installed
        console.fail(str(exc))
        if not console.interactive:
            raise
        return
    microphone = ask_device(console, found, "input", flags.microphone)
    answers.microphone = microphone.name if microphone else None
    speaker = ask_device(console, found, "output", flags.speaker)
    answers.speaker = speaker.name if speaker else None
    if microphone and flags.record_seconds > 0:
        console.until_valid(lambda first: test_recording(console, answers, microphone, flags))
    if speaker and flags.play_test:
        with scratch_config(answers) as config:
            hearing.play_sentence(config, hearing.test_sentence(answers.language))
        console.ok("played a test sentence on the speaker")


def test_recording(console: Console, answers: Answers, microphone: Device, flags: Any) -> None:
    seconds = flags.record_seconds
    console.say(f"\nRecording {seconds:.0f} s from {microphone.name}: say something ...")
    pcm = devices.record(microphone, seconds)
    rms, peak = devices.level_dbfs(pcm)
    problem = devices.level_verdict(rms)
    level = f"level {rms:.0f} dBFS (peak {peak:.0f} dBFS)"
    if problem:
        raise SetupError(f"{level}: {problem}")
    console.ok(level)
    if peak > -0.1:
        console.warn("it reached full scale: loud speech may clip; a lower capture volume is safer")
    if flags.hear:
        with scratch_config(answers) as config:
            engine, text = hearing.transcribe(config, pcm, answers.language)
        console.ok(f"voiced heard ({engine}): {text!r}" if text else
                   f"voiced heard nothing in it ({engine}): speak louder or closer")  # fmt: skip
