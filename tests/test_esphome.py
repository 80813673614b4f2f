"""The esphome service: its options, its framing, and a real daemon's device driven by Home
Assistant's own ESPHome client library (aioesphomeapi) on 127.0.0.1.

The real Home Assistant checks are in tests/test_esphome_real.py; hostile clients in
tests/test_abuse_esphome.py.
"""

from __future__ import annotations

import asyncio
import base64
import json
import struct
import wave
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio
from aioesphomeapi import (
    APIClient,
    InvalidEncryptionKeyAPIError,
    MediaPlayerCommand,
    MediaPlayerEntityState,
    MediaPlayerInfo,
    MediaPlayerState,
    RequiresEncryptionAPIError,
    SelectInfo,
    SelectState,
    SwitchState,
)
from aioesphomeapi import api_pb2 as api
from asr_fixtures import whisper  # noqa: F401 (a fixture)
from http_files import serving, tone_wav
from mqtt_fixtures import Mosquitto, Recorder, free_port, make_certs
from pipeline_helpers import overrides, started_pipeline
from pydantic import ValidationError
from voiced_plugins.esphome.frames import FrameError, FrameReader, encode
from voiced_plugins.esphome.media import decode
from voiced_plugins.esphome.options import DeviceOptions, EsphomeOptions

from voiced import events as ev
from voiced.audio import AudioChunk
from voiced.pipeline import Pipeline

TONE_SECONDS = 1.0
KEY = base64.b64encode(bytes(range(32))).decode()
OTHER_KEY = base64.b64encode(bytes(32)).decode()


# -- options and framing (fast) ------------------------------------------------------------


def test_a_plaintext_device_beyond_loopback_needs_to_be_asked_for() -> None:
    device = {"site_id": "kitchen", "port": 6053}
    with pytest.raises(ValidationError, match="not loopback"):
        EsphomeOptions(host="0.0.0.0", devices=[device])
    assert EsphomeOptions(host="0.0.0.0", devices=[device], allow_plaintext_network=True)
    assert EsphomeOptions(host="::1", devices=[device])


def test_devices_with_a_key_may_listen_beyond_loopback() -> None:
    keyed = {"site_id": "kitchen", "port": 6053, "encryption_key": KEY}
    assert EsphomeOptions(host="0.0.0.0", devices=[keyed])
    with pytest.raises(ValidationError, match="not 32"):
        DeviceOptions(site_id="kitchen", port=6053, encryption_key="c2hvcnQ=")
    with pytest.raises(ValidationError, match="not base64"):
        DeviceOptions(site_id="kitchen", port=6053, encryption_key="not a key!")


def test_each_site_is_one_device_on_a_port_of_its_own() -> None:
    with pytest.raises(ValidationError, match="port of its own"):
        EsphomeOptions(devices=[{"site_id": "a", "port": 6053}, {"site_id": "b", "port": 6053}])
    with pytest.raises(ValidationError, match="one device only"):
        EsphomeOptions(devices=[{"site_id": "a", "port": 6053}, {"site_id": "a", "port": 6054}])


def test_a_device_keeps_its_name_and_mac_across_restarts() -> None:
    device = DeviceOptions(site_id="Living Room", port=6053)
    assert device.node_name() == "voiced-living-room"
    mac = device.mac_address()
    assert mac == DeviceOptions(site_id="Living Room", port=7000).mac_address()
    first = int(mac.split(":")[0], 16)
    assert first & 0x02 and not first & 0x01  # locally administered, unicast
    assert mac != DeviceOptions(site_id="kitchen", port=6053).mac_address()


async def read_all(data: bytes, max_bytes: int = 1024) -> list[object]:
    reader = asyncio.StreamReader()
    reader.feed_data(data)
    reader.feed_eof()
    frames = FrameReader(reader, max_bytes, read_seconds=1.0)
    messages = []
    while (message := await frames.read()) is not None:
        messages.append(message)
    return messages


async def test_frames_read_back_what_was_written() -> None:
    sent = [api.HelloRequest(client_info="test"), api.PingRequest(),
            api.VoiceAssistantAudio(data=b"\x01\x02" * 300)]  # fmt: skip
    assert await read_all(b"".join(encode(m) for m in sent)) == sent


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"\x01\x00\x00", "noise encryption"),
        (b"\x17\x00\x00", "not an ESPHome API frame"),
        (b"\x00\x81\x10\x01", "over the cap"),
        (b"\x00\x80\x80\x80\x80\x80\x01", "longer than 5 bytes"),
        (b"\x00\x00\xe7\x07", "unknown message type 999"),
        (b"\x00\x02\x01\xff\xff", "does not decode"),
    ],
)
async def test_a_bad_frame_is_refused_with_its_reason(data: bytes, reason: str) -> None:
    with pytest.raises(FrameError, match=reason):
        await read_all(data)


def test_doctor_names_each_device_its_site_and_how_to_add_it() -> None:
    from voiced_plugins.esphome.doctor import esphome_checks

    from voiced.config import Settings

    devices = [{"site_id": "default", "port": 6053},
               {"site_id": "hall", "port": 6054, "encryption_key": KEY}]  # fmt: skip
    settings = Settings(pipeline={"service": ["esphome"]},
                        stages={"service": {"esphome": {"devices": devices}}})  # fmt: skip
    checks = {c.name: c for c in esphome_checks(settings)}
    assert checks["ESPHome API library"].ok
    hall = checks["ESPHome device voiced-hall on 127.0.0.1:6054"]
    assert "site 'hall', noise-encrypted" in hall.detail and "port 6054" in hall.detail
    plaintext = checks["ESPHome device voiced-default on 127.0.0.1:6053"].detail
    assert "plaintext" in plaintext
    assert esphome_checks(Settings(pipeline={"service": []})) == []


# -- a real daemon's device, with Home Assistant's client library ------------------------------


def streamed_wav(seconds: float = TONE_SECONDS, data_size: int = 0) -> bytes:
    """The tone as Home Assistant 2026.11 streams TTS: a WAV header written before the length
    was known (the data chunk's size 0, or 0xFFFFFFFF as ffmpeg writes to a pipe), then the
    samples."""
    whole = tone_wav(seconds)
    return whole[:4] + struct.pack("<I", data_size) + whole[8:40] + struct.pack(
        "<I", data_size
    ) + whole[44:]  # fmt: skip


@pytest.mark.parametrize("data_size", [0, 0xFFFFFFFF])
def test_a_wav_streamed_without_its_length_decodes_in_full(data_size: int) -> None:
    chunks = decode(streamed_wav(data_size=data_size))
    seconds = sum(c.seconds for c in chunks)
    assert seconds == pytest.approx(TONE_SECONDS, abs=0.01)


@pytest.fixture(scope="module")
def media_server() -> Iterator[str]:
    """An HTTP server on 127.0.0.1 serving /tone.wav (1 s), /long.wav (8 s), /music.wav (30 s)
    and /stream.wav (1 s, streamed: no length in its header nor the reply's), as Home Assistant
    serves its media URLs."""
    bodies = {"/tone.wav": tone_wav(TONE_SECONDS), "/long.wav": tone_wav(8.0),
              "/stream.wav": streamed_wav(), "/music.wav": tone_wav(30.0)}  # fmt: skip
    with serving(bodies, unsized=frozenset({"/stream.wav"})) as url:
        yield url


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mosquitto]:
    folder = tmp_path_factory.mktemp("esphome-broker")
    mosquitto = Mosquitto(folder, make_certs(folder))
    mosquitto.start()
    yield mosquitto
    mosquitto.stop()


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def daemon(
    tmp_path_factory: pytest.TempPathFactory, broker: Mosquitto
) -> AsyncIterator[Pipeline]:
    answers = tmp_path_factory.mktemp("answers")
    config = overrides(
        pipeline={"source": [], "sink": ["wav"], "wake": ["openwakeword"],
                  "service": ["mqtt", "esphome"]},
        stages={"sink": {"wav": {"path": str(answers), "realtime": True}},
                "service": {"mqtt": {"host": "127.0.0.1", "port": broker.port},
                            "esphome": {"zeroconf": True, "devices": [
                    {"site_id": "default", "port": 0},
                    {"site_id": "porch", "port": 0},
                    {"site_id": "hall", "port": 0, "encryption_key": KEY},
                ]}}},
    )  # fmt: skip
    async with started_pipeline(config) as pipeline:
        pipeline.answers = answers  # type: ignore[attr-defined]
        yield pipeline


@pytest_asyncio.fixture(loop_scope="module")
async def client(daemon: Pipeline) -> AsyncIterator[APIClient]:
    device = daemon.stage("service", "esphome").devices["default"]
    client = APIClient(*device.address, None)
    await client.connect(login=True)
    yield client
    await client.disconnect()


def played(daemon: Pipeline) -> list[Path]:
    return sorted(daemon.answers.glob("*.wav"))  # type: ignore[attr-defined]


async def new_files(daemon: Pipeline, before: list[Path], timeout: float = 10) -> list[Path]:
    for _ in range(int(timeout * 10)):
        new = [p for p in played(daemon) if p not in before]
        if new:
            await asyncio.sleep(0.2)  # written in full
            return new
        await asyncio.sleep(0.1)
    return []


def seconds_of(path: Path) -> float:
    with wave.open(str(path)) as wav:
        return wav.getnframes() / wav.getframerate()


def peak_of(path: Path) -> int:
    import numpy as np

    with wave.open(str(path)) as wav:
        return int(np.abs(np.frombuffer(wav.readframes(wav.getnframes()), "<i2")).max())


pytestmark_daemon = pytest.mark.asyncio(loop_scope="module")


@pytest.mark.slow
@pytestmark_daemon
async def test_an_announcement_plays_at_the_site_and_is_reported_finished(
    daemon: Pipeline, client: APIClient, media_server: str
) -> None:
    before = played(daemon)
    finished = await client.send_voice_assistant_announcement_await_response(
        f"{media_server}/tone.wav", 30, "a tone"
    )
    assert finished.success
    new = [p for p in played(daemon) if p not in before]
    assert len(new) == 1 and seconds_of(new[0]) == pytest.approx(TONE_SECONDS, abs=0.05)


@pytest.mark.slow
@pytestmark_daemon
async def test_an_announcement_streamed_without_its_length_plays_in_full(
    daemon: Pipeline, client: APIClient, media_server: str
) -> None:
    before = played(daemon)
    finished = await client.send_voice_assistant_announcement_await_response(
        f"{media_server}/stream.wav", 30, "a streamed tone"
    )
    assert finished.success
    new = [p for p in played(daemon) if p not in before]
    assert len(new) == 1 and seconds_of(new[0]) == pytest.approx(TONE_SECONDS, abs=0.05)


@pytest.mark.slow
@pytestmark_daemon
async def test_media_that_cannot_be_fetched_is_reported_unplayed(
    daemon: Pipeline, client: APIClient, media_server: str
) -> None:
    finished = await client.send_voice_assistant_announcement_await_response(
        f"{media_server}/missing.wav", 30, "nothing"
    )
    assert not finished.success
    errors = [e for e in daemon.recorder.of("esphome") if e.data["event"] == "error"]
    assert "404" in errors[-1].data["message"]


@pytest.mark.slow
@pytestmark_daemon
async def test_the_volume_scales_what_the_media_player_plays(
    daemon: Pipeline, client: APIClient, media_server: str
) -> None:
    states: list[object] = []
    client.subscribe_states(states.append)
    client.media_player_command(1, volume=0.25)
    await asyncio.sleep(0.2)
    assert [s.volume for s in states if isinstance(s, MediaPlayerEntityState)][-1] == 0.25
    before = played(daemon)
    client.media_player_command(1, media_url=f"{media_server}/tone.wav")
    new = await new_files(daemon, before)
    assert new and 3500 < peak_of(new[0]) < 4500  # a quarter of the tone's 16000
    client.media_player_command(1, volume=1.0, command=MediaPlayerCommand.STOP)


@pytest.mark.slow
@pytestmark_daemon
async def test_the_volume_changes_media_while_it_plays(
    daemon: Pipeline, client: APIClient, media_server: str
) -> None:
    before = played(daemon)
    media = await start_media(daemon, client, f"{media_server}/long.wav")  # 8 s at 16000
    await asyncio.sleep(2.0)
    client.media_player_command(1, volume=0.25)
    try:
        assert await ended(daemon, media) == "done"
    finally:
        client.media_player_command(1, volume=1.0)
    [song] = [p for p in played(daemon) if p not in before]
    peaks = levels(song, window=0.5)
    assert max(peaks[:3]) > 15000 and max(peaks[-6:]) < 4500  # full, then a quarter


@pytest.mark.slow
@pytestmark_daemon
async def test_voiceds_own_mute_shows_on_the_switch(daemon: Pipeline, client: APIClient) -> None:
    states: list[object] = []
    client.subscribe_states(states.append)
    daemon.emit(ev.Muted(True, "mqtt").event(None, "default"))  # voiced muted another way
    await asyncio.sleep(0.2)
    assert [s.state for s in states if isinstance(s, SwitchState)][-1] is True
    daemon.emit(ev.Muted(False, "mqtt").event(None, "default"))
    await asyncio.sleep(0.2)
    assert [s.state for s in states if isinstance(s, SwitchState)][-1] is False


@pytest.mark.slow
@pytestmark_daemon
async def test_a_satellite_not_connected_does_not_announce_in_another_room(
    daemon: Pipeline, media_server: str
) -> None:
    porch = daemon.stage("service", "esphome").devices["porch"]
    client = APIClient(*porch.address, None)
    await client.connect(login=True)
    try:
        before = played(daemon)
        finished = await client.send_voice_assistant_announcement_await_response(
            f"{media_server}/tone.wav", 30, "a tone"
        )
    finally:
        await client.disconnect()
    assert not finished.success
    assert played(daemon) == before  # the daemon's own speaker stayed quiet
    errors = [e for e in daemon.recorder.of("error") if e.site_id == "porch"]
    assert "no speaker now" in errors[-1].data["message"]


def hall(daemon: Pipeline) -> tuple[str, int]:
    return daemon.stage("service", "esphome").devices["hall"].address


@pytest.mark.slow
@pytestmark_daemon
async def test_an_encrypted_device_talks_to_a_client_with_its_key(daemon: Pipeline) -> None:
    client = APIClient(*hall(daemon), None, noise_psk=KEY)
    await client.connect(login=True)
    try:
        info = await client.device_info()
        entities, _ = await client.list_entities_services()
    finally:
        await client.disconnect()
    assert info.name == "voiced-hall" and info.api_encryption_supported
    assert {e.object_id for e in entities} == {"media_player", "mute", "wake_word_sensitivity"}


@pytest.mark.slow
@pytestmark_daemon
async def test_an_encrypted_device_refuses_another_key_and_plaintext(daemon: Pipeline) -> None:
    with pytest.raises(InvalidEncryptionKeyAPIError):
        await APIClient(*hall(daemon), None, noise_psk=OTHER_KEY).connect(login=True)
    with pytest.raises(RequiresEncryptionAPIError):
        await APIClient(*hall(daemon), None).connect(login=True)
    client = APIClient(*hall(daemon), None, noise_psk=KEY)  # and still serves the right one
    await client.connect(login=True)
    await client.disconnect()


def this_client(messages: list[tuple[str, bytes, bool]]) -> list[str] | None:
    """``connected``, ``announce``, ``disconnected`` in that order among the esphome events
    (an earlier client's ``disconnected`` may come among them), once all three are there."""
    said = [json.loads(payload)["data"]["event"] for _, payload, _ in messages]
    wanted, found = ["connected", "announce", "disconnected"], []
    for event in said:
        if len(found) < len(wanted) and event == wanted[len(found)]:
            found.append(event)
    return found if found == wanted else None


@pytest.mark.slow
@pytestmark_daemon
async def test_what_the_device_does_is_published_over_mqtt(
    daemon: Pipeline, broker: Mosquitto, media_server: str
) -> None:
    events = Recorder(broker.port, ["voiced/default/event/esphome"])
    try:
        client = APIClient(*daemon.stage("service", "esphome").devices["default"].address, None)
        await client.connect(login=True)
        await client.send_voice_assistant_announcement_await_response(
            f"{media_server}/tone.wav", 30, "a tone"
        )
        await client.disconnect()
        said = await events.until(lambda ms: this_client(ms))
    finally:
        events.close()
    assert said == ["connected", "announce", "disconnected"]


class QuietSource:
    """A satellite-like source that ends at once (the site exists while it is attached)."""

    site_id = "porch"
    live = True

    def load(self) -> None:
        pass

    def close(self) -> None:
        pass

    async def chunks(self) -> AsyncIterator[object]:
        return
        yield


class ConnectedSource(QuietSource):
    """A satellite-like source that stays connected, silent, until detached."""

    async def chunks(self) -> AsyncIterator[object]:
        await asyncio.Event().wait()
        yield


@pytest.mark.slow
@pytestmark_daemon
async def test_a_wake_word_choice_waits_for_a_site_that_is_not_connected(
    daemon: Pipeline,
) -> None:
    assert daemon.set_wake_words("porch", {"alexa"}) is False  # no audio now: kept
    await daemon.attach_site(QuietSource())
    assert daemon.sites["porch"].wake_words == {"alexa"}
    await daemon.detach_site("porch")
    daemon.set_wake_words("porch", None)


@pytest.mark.slow
@pytestmark_daemon
async def test_the_sensitivity_select_sets_how_readily_the_rooms_wake_word_fires(
    daemon: Pipeline,
) -> None:
    porch = daemon.stage("service", "esphome").devices["porch"]
    client = APIClient(*porch.address, None)
    await client.connect(login=True)
    try:
        entities, _ = await client.list_entities_services()
        select = next(e for e in entities if isinstance(e, SelectInfo))
        assert select.options == ["Slightly sensitive", "Moderately sensitive", "Very sensitive"]
        states: list[object] = []
        client.subscribe_states(states.append)
        client.select_command(select.key, "Very sensitive")  # while the room has no audio
        await asyncio.sleep(0.3)
        assert [s.state for s in states if isinstance(s, SelectState)][-1] == "Very sensitive"
        await daemon.attach_site(ConnectedSource())  # its audio comes: the level holds
        assert daemon.sites["porch"].wakes[0].threshold == 0.25  # the configured 0.5, halved
        client.select_command(select.key, "Slightly sensitive")
        await asyncio.sleep(0.3)
        assert daemon.sites["porch"].wakes[0].threshold == 0.75
        said = [
            e.data for e in daemon.recorder.of("esphome") if e.data["event"] == "wake-sensitivity"
        ]
        assert said[-1] == {"event": "wake-sensitivity", "level": "slightly",
                            "thresholds": {"OpenWakeWord": 0.75}}  # fmt: skip
    finally:
        client.select_command(select.key, "Moderately sensitive")
        await asyncio.sleep(0.1)
        await daemon.detach_site("porch", timeout=0.1)
        await client.disconnect()


@pytest.mark.slow
@pytestmark_daemon
async def test_the_media_players_stop_cuts_an_announcement_short(
    daemon: Pipeline, client: APIClient, media_server: str
) -> None:
    """What a barge-in does too: the announcement's run is cancelled, and Home Assistant is
    told it did not play to the end."""
    before = played(daemon)
    announcing = asyncio.ensure_future(
        client.send_voice_assistant_announcement_await_response(
            f"{media_server}/long.wav", 30, "a long tone"
        )
    )
    await asyncio.sleep(1.5)
    assert not announcing.done()
    client.media_player_command(1, command=MediaPlayerCommand.STOP)
    finished = await announcing
    assert not finished.success
    new = [p for p in played(daemon) if p not in before]
    assert seconds_of(new[0]) < 6  # of the 8 s tone
    ended = [e for e in daemon.recorder.of("run-end") if e.site_id == "default"]
    assert ended[-1].data["reason"] == "cancelled"


@pytest.mark.slow
@pytestmark_daemon
async def test_the_devices_are_announced_over_mdns_on_their_interface(daemon: Pipeline) -> None:
    from zeroconf import IPVersion
    from zeroconf.asyncio import AsyncZeroconf

    zeroconf = AsyncZeroconf(interfaces=["127.0.0.1"], ip_version=IPVersion.V4Only)
    try:
        devices = daemon.stage("service", "esphome").devices
        found = {}
        for site, device in devices.items():
            info = await zeroconf.async_get_service_info(
                "_esphomelib._tcp.local.", f"{device.name}._esphomelib._tcp.local.", 5000
            )
            assert info is not None, site
            found[site] = info
    finally:
        await zeroconf.async_close()
    hall = found["hall"]
    assert hall.port == devices["hall"].address[1]
    assert hall.parsed_addresses() == ["127.0.0.1"]
    mac = devices["hall"].config.mac_address().replace(":", "").lower()
    assert hall.properties[b"mac"] == mac.encode()
    assert hall.properties[b"api_encryption"] == b"Noise_NNpsk0_25519_ChaChaPoly_SHA256"
    assert b"api_encryption" not in found["default"].properties


@pytest.mark.slow
@pytestmark_daemon
async def test_a_second_voiced_announcing_the_same_names_is_told_and_keeps_running(
    daemon: Pipeline, caplog: pytest.LogCaptureFixture
) -> None:
    from voiced_plugins.esphome.discovery import Announcer

    devices = list(daemon.stage("service", "esphome").devices.values())
    twin = Announcer("127.0.0.1")
    await twin.start(devices)  # the daemon announces these names already
    try:
        assert twin.services == []
        assert "already announces 'voiced-default' over mDNS" in caplog.text
    finally:
        await twin.stop()


@pytest.mark.slow
async def test_a_twin_on_the_same_machine_is_told_for_every_name_it_shares(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Two responders on one host share port 5353: the answer to zeroconf's unicast probe may
    reach either one's socket, so the names are also asked for over multicast first."""
    from voiced_plugins.esphome.device import Device
    from voiced_plugins.esphome.discovery import Announcer

    def devices(*sites: str) -> list[Device]:
        options = EsphomeOptions(devices=[DeviceOptions(site_id=s, port=0) for s in sites])
        made = [Device(d, options, None) for d in options.devices]
        for port, device in enumerate(made, start=free_port()):
            device.address = ("127.0.0.1", port)  # where each would listen
        return made

    first, twin = Announcer("127.0.0.1"), Announcer("127.0.0.1")
    await first.start(devices("den", "attic", "porch"))
    try:
        await twin.start(devices("den", "attic", "porch", "garage"))
        try:
            announced = [info.name for info in twin.services]  # type: ignore[attr-defined]
            assert announced == ["voiced-garage._esphomelib._tcp.local."]
            for site in ("den", "attic", "porch"):
                assert f"already announces 'voiced-{site}' over mDNS" in caplog.text
        finally:
            await twin.stop()
    finally:
        await first.stop()


class SpeakingSource(QuietSource):
    """The default room's microphone: silent until told to speak, then what it hears at a
    real one's pace, then silent."""

    site_id = "default"

    def __init__(self, pcm: bytes) -> None:
        self.pcm = pcm
        self.speak = asyncio.Event()

    async def chunks(self) -> AsyncIterator[object]:
        await self.speak.wait()
        step = 3200  # 0.1 s
        for start in range(0, len(self.pcm), step):
            yield AudioChunk(self.pcm[start : start + step])
            await asyncio.sleep(0.1)
        await asyncio.Event().wait()


def levels(path: Path, window: float = 0.05) -> list[int]:
    """The peak of each ``window`` seconds of a played file."""
    import numpy as np

    with wave.open(str(path)) as wav:
        samples = np.abs(np.frombuffer(wav.readframes(wav.getnframes()), "<i2").astype(int))
        step = int(wav.getframerate() * window)
    return [int(samples[i : i + step].max()) for i in range(0, samples.size - step + 1, step)]


async def ended(daemon: Pipeline, run_id: str, timeout: float = 30) -> str:
    """Why a run ended, once it has."""
    for _ in range(int(timeout * 10)):
        reasons = [e.data["reason"] for e in daemon.recorder.of("run-end") if e.run_id == run_id]
        if reasons:
            return str(reasons[0])
        await asyncio.sleep(0.1)
    raise AssertionError(f"run {run_id} did not end in {timeout} s")


async def next_wake(daemon: Pipeline, heard_before: int, timeout: float = 30) -> str:
    """The run of the default room's next wake word after ``heard_before`` of them."""
    for _ in range(int(timeout * 10)):
        wakes = [e for e in daemon.recorder.of("wake") if e.site_id == "default"]
        if len(wakes) > heard_before:
            return str(wakes[heard_before].run_id)
        await asyncio.sleep(0.1)
    raise AssertionError(f"no wake word heard in {timeout} s")


def wakes_heard(daemon: Pipeline) -> int:
    return len([e for e in daemon.recorder.of("wake") if e.site_id == "default"])


def media_runs(daemon: Pipeline) -> list[str]:
    return [e.run_id for e in daemon.recorder.of("run-start") if e.data["reason"] == "media"]


async def start_media(daemon: Pipeline, client: APIClient, url: str) -> str:
    """Home Assistant's play_media at the default room; the media's run, once it began."""
    runs = len(media_runs(daemon))
    client.media_player_command(1, media_url=url)
    for _ in range(100):
        if len(media_runs(daemon)) > runs:
            return media_runs(daemon)[-1]
        await asyncio.sleep(0.1)
    raise AssertionError(f"no media run began for {url}")


@pytest.mark.slow
@pytestmark_daemon
async def test_media_is_lowered_under_a_spoken_command_and_its_answer_then_plays_on(
    daemon: Pipeline,
    client: APIClient,
    media_server: str,
    whisper: object,  # noqa: F811
) -> None:
    from speech import piper, silence

    spoken = silence(0.3) + piper("Okay nabu.") + silence(0.3) + piper("What time is it?")
    microphone = SpeakingSource(spoken + silence(1.5))
    await daemon.attach_site(microphone)
    try:
        before = played(daemon)
        media = await start_media(daemon, client, f"{media_server}/music.wav")  # 30 s at 16000
        heard = wakes_heard(daemon)
        microphone.speak.set()
        command = await next_wake(daemon, heard)
        assert await ended(daemon, command) == "done"  # the command was answered
        assert not [e for e in daemon.recorder.of("run-end") if e.run_id == media]  # plays on
        await asyncio.sleep(1.5)  # at full volume again
        client.media_player_command(1, command=MediaPlayerCommand.STOP)
        assert await ended(daemon, media) == "cancelled"
    finally:
        await daemon.detach_site("default", timeout=0.1)
    new = [p for p in played(daemon) if p not in before]
    assert len(new) == 1  # the answer was mixed into the media's stream
    peaks = levels(new[0])
    full = sum(1 for p in peaks if p > 15000) * 0.05
    ducked = sum(1 for p in peaks if 2800 < p < 3600) * 0.05  # the tone at 0.2, nothing over it
    assert full > 1.0 and ducked > 0.5
    over = sum(1 for p in peaks if 4000 < p < 15000) * 0.05  # the answer over the lowered tone
    said = [e.data["speech"] for e in daemon.recorder.of("handled") if e.run_id == command]
    heard = transcribe(whisper, new[0])
    assert over >= 0.1 and tells_the_time(said[0], heard), (said, heard)


def tells_the_time(said: str, heard: str) -> bool:
    """Whether tiny.en, over a tone, heard some part of the time said ("4:59 PM").

    It wrote "428 dm." for "4:28 PM" and "for 59pm." for "4:59 PM": the hour, the minutes or
    the a.m./p.m. is enough, once spaces and dots are gone.
    """
    hour, rest = said.split(":")
    minutes, marker = rest[:2], rest[2:].strip().lower()
    letters = "".join(c for c in heard.lower() if c.isalnum())
    return any(part and part in letters for part in (hour, minutes.lstrip("0"), marker))


def transcribe(whisper: object, path: Path) -> str:  # noqa: F811 (the fixture)
    import numpy as np

    with wave.open(str(path)) as wav:
        pcm = wav.readframes(wav.getnframes())
    audio = np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768
    segments, _ = whisper.transcribe(audio, language="en", beam_size=1)  # type: ignore[attr-defined]
    return " ".join(s.text for s in segments).strip().lower()


@pytest.mark.slow
@pytestmark_daemon
async def test_the_media_player_pauses_and_resumes_media_where_it_stopped(
    daemon: Pipeline, client: APIClient, media_server: str
) -> None:
    entities, _ = await client.list_entities_services()
    player = next(e for e in entities if isinstance(e, MediaPlayerInfo))
    assert player.supports_pause
    states: list[object] = []
    client.subscribe_states(states.append)
    before = played(daemon)
    media = await start_media(daemon, client, f"{media_server}/long.wav")
    await asyncio.sleep(0.5)
    client.media_player_command(1, command=MediaPlayerCommand.PAUSE)
    await asyncio.sleep(2.0)
    shown = [s.state for s in states if isinstance(s, MediaPlayerEntityState)]
    assert shown[-1] == MediaPlayerState.PAUSED
    client.media_player_command(1, command=MediaPlayerCommand.PLAY)
    await asyncio.sleep(0.3)
    shown = [s.state for s in states if isinstance(s, MediaPlayerEntityState)]
    assert shown[-1] == MediaPlayerState.PLAYING
    assert await ended(daemon, media) == "done"
    start, end = (
        next(e.mono for e in daemon.recorder.of(kind) if e.run_id == media)
        for kind in ("run-start", "run-end")
    )
    new = [p for p in played(daemon) if p not in before]
    assert seconds_of(new[0]) == pytest.approx(8.0, abs=0.05)  # all of it, once
    assert end - start > 9.5  # 8 s played, 2 s paused


@pytest.mark.slow
@pytestmark_daemon
async def test_a_room_cut_off_while_it_listens_ends_that_run(daemon: Pipeline) -> None:
    from speech import piper, silence

    microphone = SpeakingSource(silence(0.3) + piper("Okay nabu.") + silence(0.5))
    heard = wakes_heard(daemon)
    microphone.speak.set()
    await daemon.attach_site(microphone)
    try:
        listening = await next_wake(daemon, heard)
    finally:
        await daemon.detach_site("default", timeout=0.1)  # its feed cut off, not ended
    assert await ended(daemon, listening, timeout=5) == "detached"
