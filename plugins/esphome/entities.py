"""The entities a voiced device shows Home Assistant: a media player, a mute switch and a
wake-word sensitivity select.

Home Assistant adds the rest itself for a voice-assistant device: the assist satellite, the
pipeline, wake-word and finished-speaking selects.
"""

from __future__ import annotations

from dataclasses import dataclass

from aioesphomeapi.api_pb2 import (  # type: ignore[attr-defined]
    ListEntitiesMediaPlayerResponse,
    ListEntitiesSelectResponse,
    ListEntitiesSwitchResponse,
    MediaPlayerStateResponse,
    MediaPlayerSupportedFormat,
    SelectStateResponse,
    SwitchStateResponse,
)
from aioesphomeapi.model import EntityCategory, MediaPlayerFormatPurpose, MediaPlayerState
from google.protobuf.message import Message

MEDIA_PLAYER_KEY = 1
MUTE_KEY = 2
SENSITIVITY_KEY = 3
SENSITIVITY_OPTIONS = {
    "Slightly sensitive": "slightly",
    "Moderately sensitive": "moderately",
    "Very sensitive": "very",
}
"""The select's options (as on Home Assistant's Voice Preview Edition) -> WAKE_SENSITIVITIES."""


@dataclass
class DeviceState:
    """What the entities show: kept per site, shared by every connection to the device."""

    muted: bool = False  # the microphone (the mute switch)
    volume: float = 1.0  # gain applied to what this device plays for Home Assistant
    sound_muted: bool = False  # the media player's own mute
    playing: bool = False  # media
    paused: bool = False  # the media is paused
    answering: bool = False  # Home Assistant's answer plays
    announcing: bool = False
    wake_sensitivity: str = "moderately"  # one of WAKE_SENSITIVITIES


def entity_list() -> list[Message]:
    """``ListEntities`` answers: the media player (announcements as WAV at any rate: voiced
    converts what it gets; media pauses, and is lowered while the room listens or speaks),
    the microphone's mute switch and the wake-word sensitivity."""
    wav = MediaPlayerSupportedFormat(
        format="wav", purpose=MediaPlayerFormatPurpose.ANNOUNCEMENT.value
    )
    return [
        ListEntitiesMediaPlayerResponse(
            object_id="media_player",
            key=MEDIA_PLAYER_KEY,
            name="Media Player",
            supports_pause=True,
            supported_formats=[wav],
        ),
        ListEntitiesSwitchResponse(
            object_id="mute",
            key=MUTE_KEY,
            name="Mute",
            icon="mdi:microphone-off",
            entity_category=EntityCategory.CONFIG.value,
        ),
        ListEntitiesSelectResponse(
            object_id="wake_word_sensitivity",
            key=SENSITIVITY_KEY,
            name="Wake word sensitivity",
            icon="mdi:account-voice",
            options=list(SENSITIVITY_OPTIONS),
            entity_category=EntityCategory.CONFIG.value,
        ),
    ]


def entity_states(state: DeviceState) -> list[Message]:
    """The entities' current states (sent on subscribe and on every change)."""
    if state.announcing or state.answering or (state.playing and not state.paused):
        player = MediaPlayerState.PLAYING  # Home Assistant 2026.11 maps no ANNOUNCING state
        player = MediaPlayerState.PLAYING
    elif state.playing:
        player = MediaPlayerState.PAUSED
    else:
        player = MediaPlayerState.IDLE
    return [
        MediaPlayerStateResponse(
            key=MEDIA_PLAYER_KEY, state=player.value, volume=state.volume, muted=state.sound_muted
        ),
        SwitchStateResponse(key=MUTE_KEY, state=state.muted),
        SelectStateResponse(key=SENSITIVITY_KEY, state=sensitivity_option(state.wake_sensitivity)),
    ]


def sensitivity_option(level: str) -> str:
    """The select's option that shows a level."""
    return next(option for option, value in SENSITIVITY_OPTIONS.items() if value == level)
