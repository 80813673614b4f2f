"""One ``language`` setting, per site, spelled for each stage; hassil and the built-in handler
answer in the site's language (real home-assistant-intents sentences and responses)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from voiced_plugins.asr_whisper.ct2 import WhisperCt2Asr, WhisperCt2Options
from voiced_plugins.asr_whisper.models import ModelError
from voiced_plugins.handle_builtin import BuiltinHandler, BuiltinOptions, ResponsesHandler
from voiced_plugins.handle_builtin import ResponsesOptions as RespOptions
from voiced_plugins.intent_hassil import HassilIntent, HassilOptions
from voiced_plugins.intent_hassil.languages import prepare

from voiced.config import ConfigError, Settings, load_settings
from voiced.context import RunContext
from voiced.intents import Transcript
from voiced.languages import (
    LanguageError,
    canonical,
    counts_characters,
    espeak_voice,
    intents_language,
    same_language,
    whisper_language,
)

HOME = Path(__file__).parent / "homes" / "multilingual.yaml"
REPO_HOME = Path(__file__).parents[1] / "config" / "home.yaml"
HA_LANGUAGES = ["de", "de-CH", "en", "zh-CN", "zh-HK", "zh-TW", "nb", "pt", "pt-BR"]


@pytest.mark.parametrize(
    ("tag", "whisper", "intents", "espeak"),
    [("en", "en", "en", "en"), ("de", "de", "de", "de"), ("de_CH", "de", "de-CH", "de-ch"),
     ("zh", "zh", "zh-CN", "cmn-latn-pinyin"), ("zh-hans", "zh", "zh-CN", "cmn-latn-pinyin"),
     ("zh_TW", "zh", "zh-TW", "cmn-latn-pinyin"), ("yue", "zh", "zh-HK", "yue"),
     ("pt-br", "pt", "pt-BR", "pt-br"), ("no", "no", "nb", "no")],
)  # fmt: skip
def test_each_stage_gets_its_own_spelling_of_the_language(tag, whisper, intents, espeak):
    assert whisper_language(tag) == whisper
    assert intents_language(tag, HA_LANGUAGES) == intents
    assert espeak_voice(tag) == espeak


def test_tags_are_cased_the_bcp47_way_and_nonsense_is_refused():
    assert canonical("zh_cn") == "zh-CN"
    assert canonical("ZH-hant-tw") == "zh-Hant-TW"
    assert same_language("en_US", "en") and same_language("cmn", "zh-CN")
    assert not same_language("de", "en")
    assert counts_characters("zh-CN") and not counts_characters("de")
    with pytest.raises(LanguageError, match="not a language tag"):
        canonical("German!")
    assert intents_language("xx", HA_LANGUAGES) is None


def test_a_site_speaks_its_own_language_else_the_house_one(tmp_path):
    config = tmp_path / "voiced.toml"
    config.write_text(
        'language = "en"\n[sites.kids]\nlanguage = "de"\n[sites.oma]\nlanguage = "zh_cn"\n'
    )
    settings = load_settings(config)
    assert settings.language_of("kids") == "de"
    assert settings.language_of("oma") == "zh-CN"
    assert settings.language_of("kitchen") == "en"
    assert settings.languages() == ["en", "de", "zh-CN"]


def test_a_bad_language_or_site_key_is_a_config_error_naming_it(tmp_path):
    config = tmp_path / "voiced.toml"
    config.write_text('[sites.kids]\nlanguage = "Deutsch!"\n')
    with pytest.raises(ConfigError, match=r"sites\.kids\.language.*not a language tag"):
        load_settings(config)
    config.write_text('[sites.kids]\nvoice = "de"\n')
    with pytest.raises(ConfigError, match=r"sites\.kids\.voice: unknown key"):
        load_settings(config)


@pytest.fixture(scope="module")
def app():
    settings = Settings(
        language="en", sites={"kids": {"language": "de"}, "oma": {"language": "zh"}}
    )
    app = SimpleNamespace(settings=settings)
    hassil = HassilIntent(HassilOptions(home=str(HOME)), app)
    hassil.load()
    app.stage = lambda kind, name=None: hassil if kind == "intent" else None
    yield app
    hassil.close()


def recognize(app, text: str, site: str):
    context = RunContext(site_id=site, language=app.settings.language_of(site))
    return app.stage("intent").voiced_recognize(
        Transcript(text, context.language), context
    ), context


def test_hassil_loads_the_house_language_and_every_sites(app):
    grammars = app.stage("intent").grammars
    assert list(grammars) == ["en", "de", "zh-CN"]
    # each has its word graph: German's of spaced words, Chinese's of its templates' words
    assert grammars["de"].graph.spaced and not grammars["zh-CN"].graph.spaced


L = {"domain": "light"}


@pytest.mark.parametrize(
    ("site", "text", "intent", "slots"),
    [("kids", "Schalte das Licht in der Küche ein", "HassTurnOn", {"area": "Küche", **L}),
     ("kids", "Wie spät ist es?", "HassGetCurrentTime", {}),
     ("kids", "Mach das Licht im Schlafzimmer aus", "HassTurnOff", {"area": "Schlafzimmer", **L}),
     ("oma", "打开厨房的灯", "HassTurnOn", {"area": "厨房", **L}),
     ("oma", "打開廚房的燈。", "HassTurnOn", {"area": "厨房", **L}),  # as Whisper writes it
     ("oma", "现在几点了？", "HassGetCurrentTime", {}),
     ("default", "turn on the kitchen light", "HassTurnOn", {"name": "Kitchen Light"})],
)  # fmt: skip
def test_each_site_is_matched_in_its_own_language(app, site, text, intent, slots):
    found, _ = recognize(app, text, site)
    assert (found.name, found.slots) == (intent, slots)


@pytest.mark.parametrize(
    ("site", "text"),
    [("kids", "Das Wetter ist heute wirklich schön"), ("oma", "今天天气真好"),
     ("kids", "turn on the kitchen light"), ("default", "Schalte das Licht in der Küche ein"),
     ("kids", "Na na.")],  # not "风扇an": a word heard in Latin letters is no slip of a Han one
)  # fmt: skip
def test_chatter_or_another_language_matches_nothing(app, site, text):
    found, context = recognize(app, text, site)
    assert found is None
    assert context.data["intent_errors"][0]["recognizer"] == "hassil"


@pytest.mark.parametrize("text", ["TV TV", "An an"])
def test_a_stutter_dropped_is_no_word_kept_for_sentence_repair(text):
    # before: "TV TV" -> drop one "TV", repair the other into the glued "tvan" (TV an)
    settings = Settings(language="de")
    hassil = HassilIntent(HassilOptions(home=str(REPO_HOME)), SimpleNamespace(settings=settings))
    hassil.load()
    try:
        context = RunContext(site_id="default", language="de")
        assert hassil.voiced_recognize(Transcript(text, "de"), context) is None
    finally:
        hassil.close()


def test_chinese_is_matched_in_the_grammars_script_without_its_full_stop():
    assert prepare("打開廚房的燈。", "zh-CN") == "打开厨房的灯"
    assert prepare("打开厨房的灯", "zh-TW") == "打開廚房的燈"
    assert prepare("Schalte das Licht ein.", "de") == "Schalte das Licht ein."


@pytest.mark.parametrize(
    ("site", "text", "answer"),
    [("kids", "Schalte das Licht in der Küche ein", "Licht eingeschaltet"),
     ("oma", "打开厨房的灯", "厨房灯已打开"),
     ("default", "turn on the kitchen light", "Turned on the light")],
)  # fmt: skip
def test_home_assistants_response_is_said_in_the_sites_language(app, site, text, answer):
    handler = ResponsesHandler(RespOptions(), app)
    handler.load()
    intent, context = recognize(app, text, site)
    assert handler.voiced_handle(intent, context).speech == answer


def test_the_time_is_told_in_the_sites_language(app):
    handler = BuiltinHandler(BuiltinOptions(), app)
    handler.load()
    german = handler.voiced_handle(*recognize(app, "Wie spät ist es", "kids")).speech
    chinese = handler.voiced_handle(*recognize(app, "现在几点了", "oma")).speech
    assert german.startswith("Es ist ") and german[-5:-3].isdigit() and german[-3] == ":"
    assert chinese.endswith("分") and "点" in chinese


def test_not_understood_is_said_in_the_sites_language(app):
    hassil = app.stage("intent")
    assert hassil.not_understood("de") == "Entschuldigung, das habe ich nicht verstanden"
    assert hassil.not_understood("zh-CN").startswith("抱歉")
    assert hassil.not_understood("fr") is None  # not loaded: the configured text is said


def test_an_english_only_model_refuses_a_config_that_speaks_german():
    app = SimpleNamespace(settings=Settings(language="en", sites={"kids": {"language": "de"}}))
    asr = WhisperCt2Asr(WhisperCt2Options(cpu_threads=1, warmup=False), app)
    with pytest.raises(ModelError, match=r"English-only, but the config speaks de.*bundled:base"):
        asr.load()


def test_a_language_the_voice_does_not_speak_gets_espeak_with_an_event_saying_so():
    from voiced_plugins.tts_espeak import EspeakOptions, EspeakTts
    from voiced_plugins.tts_piper import PiperOptions, PiperTts

    from voiced.chain import EngineChain
    from voiced.voices import LanguageVoices

    events = []
    main = EngineChain("tts", [("piper", PiperTts(PiperOptions()))], events.append)
    main.load()
    voices = LanguageVoices(
        main, lambda name, voice: EspeakTts(EspeakOptions(voice=voice)), events.append, "house"
    )
    voices.prepare(["en", "de", "zh-CN"])
    try:
        assert voices.chain("en") is main  # the Piper voice speaks en-us
        (said,) = [e for e in events if e.type == "voice-language" and e.data["language"] == "de"]
        assert said.data == {
            "language": "de", "voice": "piper", "voice_language": "en-us", "engine": "espeak",
            "engine_voice": "de",
            "reason": "the configured voice piper speaks en-us, not de: eSpeak NG speaks it",
        }  # fmt: skip
        name, engine = voices.chain("zh-CN").active
        assert (name, engine.info["voice"]) == ("espeak", "Chinese_(Mandarin,_latin_as_Pinyin)")
        assert voices.chain("de").call("synthesize", "Licht eingeschaltet")[1].seconds > 0.5
    finally:
        voices.close()
        main.engines[0][1].close()
