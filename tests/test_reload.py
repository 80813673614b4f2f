"""Reload (SIGHUP): the live settings apply at once; runtime state (mute) is not config."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from pathlib import Path

import pytest
from pipeline_helpers import EventRecorder
from speech import silence

from voiced.audio import write_wav
from voiced.config import load_settings
from voiced.daemon import LIVE_SETTINGS, Daemon, apply_live, prepare
from voiced.pipeline import Pipeline

EMPTY = Path(__file__).parent / "empty.toml"

CONFIG = """
[pipeline]
source = ["file"]
wake = []
asr = ["whisper-ctranslate2"]
intent = ["hassil"]
handler = ["builtin"]
tts = ["piper"]
sink = []
service = []

[stages.source.file]
path = "{wav}"
realtime = true

[conversation]
muted = {muted}
"""

# One changed value per live setting: a new live setting needs one here too.
CHANGES = {
    "log_level": {"log_level": "DEBUG"},
    "vad": {"vad": {"silence_seconds": 0.9}},
    "conversation": {"conversation": {"follow_up": "off"}},
    "arbiter": {"arbiter": {"window": 0.5}},
    "speakers": {"speakers": {"permissions": [{"domain": "lock", "allow": ["alice"]}]}},
    "pipeline.stage_timeout": {"pipeline": {"stage_timeout": 5.0}},
    "pipeline.shutdown_grace": {"pipeline": {"shutdown_grace": 2.0}},
    "pipeline.not_understood": {"pipeline": {"not_understood": "Come again?"}},
}


def test_every_live_setting_is_applied_by_a_reload_and_nothing_else_is():
    assert set(CHANGES) == set(LIVE_SETTINGS)
    level = logging.getLogger().level
    try:
        for key, change in CHANGES.items():
            settings, host = prepare(EMPTY)
            pipeline = Pipeline(settings, host)
            result = apply_live(pipeline, load_settings(EMPTY, **change))
            assert result == {"applied": [key], "needs_restart": []}, key
            pipeline.executor.shutdown()
    finally:
        logging.getLogger().setLevel(level)


async def until(check, timeout: float = 60.0) -> None:
    for _ in range(int(timeout / 0.05)):
        if check():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("condition not met in time")


@pytest.mark.slow
async def test_sighup_with_an_unchanged_file_keeps_a_muted_site_muted(tmp_path):
    wav = tmp_path / "room.wav"
    write_wav(wav, silence(60.0))
    config = tmp_path / "voiced.toml"
    config.write_text(CONFIG.format(wav=wav, muted="false"))
    recorder = EventRecorder()
    daemon = Daemon(config, extra_plugins=[("recorder", recorder)])
    running = asyncio.create_task(daemon.run())
    try:
        await until(lambda: "default" in daemon.pipeline.sites)
        site = daemon.pipeline.sites["default"]
        daemon.pipeline.set_muted(True)  # every site, as MQTT's mute command does
        os.kill(os.getpid(), signal.SIGHUP)
        await until(lambda: recorder.of("reload"))
        assert recorder.of("reload")[-1].data == {"ok": True, "applied": [], "needs_restart": []}
        assert site.muted
        assert daemon.pipeline.settings.conversation.muted is False  # the config is not state

        daemon.pipeline.set_muted(False)
        config.write_text(CONFIG.format(wav=wav, muted="true"))  # a changed file still applies
        os.kill(os.getpid(), signal.SIGHUP)
        await until(lambda: len(recorder.of("reload")) == 2)
        assert recorder.of("reload")[-1].data["applied"] == ["conversation"]
        assert site.muted
    finally:
        daemon.request_stop()
        await asyncio.wait_for(running, 60)
