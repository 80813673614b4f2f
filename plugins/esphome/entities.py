"""The entities a voiced device shows Home Assistant: a media player and a mute switch.

Home Assistant adds the rest itself for a voice-assistant device: the assist satellite, the
pipeline, wake-word and finished-speaking selects.
"""

from __future__ import annotations

from dataclasses import dataclass

from aioesphomeapi.api_pb2 import (  # type: ignore[attr-defined]
    ListEntitiesMediaPlayerResponse,
    ListEntitiesSwitchResponse,
    MediaPlayerStateResponse,
    MediaPlayerSupportedFormat,
    SwitchStateResponse,
)
from aioesphomeapi.model import EntityCategory, MediaPlayerFormatPurpose, MediaPlayerState
from google.protobuf.message import Message

MEDIA_PLAYER_KEY = 1
MUTE_KEY = 2


@dataclass
class DeviceState:
    """What the entities show: kept per site, shared by every connection to the device."""

    muted: bool = False  # the microphone (the mute switch)
    volume: float = 1.0  # gain applied to what this device plays for Home Assistant
    sound_muted: bool = False  # the media player's own mute
    playing: bool = False
    announcing: bool = False


def entity_list() -> list[Message]:
    """``ListEntities`` answers: the media player (announcements as WAV at any rate: voiced
    converts what it gets) and the microphone's mute switch."""
    wav = MediaPlayerSupportedFormat(
        format="wav", purpose=MediaPlayerFormatPurpose.ANNOUNCEMENT.value
    )
    return [
        ListEntitiesMediaPlayerResponse(
            object_id="media_player",
            key=MEDIA_PLAYER_KEY,
            name="Media Player",
            supports_pause=False,
            supported_formats=[wav],
        ),
        ListEntitiesSwitchResponse(
            object_id="mute",
            key=MUTE_KEY,
            name="Mute",
            icon="mdi:microphone-off",
            entity_category=EntityCategory.CONFIG.value,
        ),
    ]


def entity_states(state: DeviceState) -> list[Message]:
    """The entities' current states (sent on subscribe and on every change)."""
    if state.announcing:
        player = MediaPlayerState.ANNOUNCING
    elif state.playing:
        player = MediaPlayerState.PLAYING
    else:
        player = MediaPlayerState.IDLE
    return [
        MediaPlayerStateResponse(
            key=MEDIA_PLAYER_KEY, state=player.value, volume=state.volume, muted=state.sound_muted
        ),
        SwitchStateResponse(key=MUTE_KEY, state=state.muted),
    ]
