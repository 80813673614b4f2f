"""Enrolling a voice at a site (an MQTT or Home Assistant command): the daemon asks for each
sentence through the site's speaker, records the answers, checks them and stores the voice."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from voiced import events as ev
from voiced.enrollment import SENTENCES, Clip, EnrollmentError, voice_of
from voiced.events import error_event
from voiced.limits import CommandRefused
from voiced.speakers import VoiceBookError, normalize_speaker_name

if TYPE_CHECKING:
    from voiced.pipeline import Pipeline

log = logging.getLogger(__name__)

CAPTURE_SECONDS = 10.0  # how long to wait for each sentence to start


async def enroll_at_site(app: Pipeline, name: str, site_id: str | None = None) -> bool:
    """Guided enrollment of ``name`` at a site with a microphone; True when enrolled. A clip
    that fails its checks is said aloud and is an ``error`` event; nothing is stored."""
    speakers = app.speakers
    if speakers is None:
        raise CommandRefused("enroll: no speaker stage is loaded (pipeline.speaker)")
    try:
        name = normalize_speaker_name(name)
    except ValueError as exc:
        raise CommandRefused(f"enroll: {exc}") from None
    site_id = site_id or app.settings.site_id
    if site_id not in app.sites:
        raise CommandRefused(f"enroll: site {site_id!r} has no microphone here")
    site = app.sites[site_id]
    clips = []
    try:
        for number, sentence in enumerate(SENTENCES, 1):
            await app.say(f"Please say: {sentence}", site_id)
            audio = await site.capture_next(CAPTURE_SECONDS)
            clips.append(Clip(f"sentence {number}", audio))
        rule = app.settings.speakers.rule()
        floor = rule.alone + rule.threshold
        voices = await app.in_thread(voice_of, clips, speakers.encoder, floor, stage="speaker")
        speakers.enroll(name, [v.vector for v in voices])
    except (EnrollmentError, VoiceBookError, TimeoutError) as exc:
        reason = str(exc) or f"no speech heard for sentence {len(clips) + 1}"
        log.error("[%s] enrolling %s failed: %s", site_id, name, reason)
        app.emit(error_event("speaker", f"enrolling {name} failed: {reason}", None, site_id))
        await app.say("Sorry, I could not learn that voice. Please try again.", site_id)
        return False
    log.info("[%s] enrolled %s from %d sentences", site_id, name, len(voices))
    app.emit(ev.SpeakerEnrolled(name, len(voices)).event(None, site_id))
    await app.say(f"Thank you, {name.title()}. I know your voice now.", site_id)
    return True
