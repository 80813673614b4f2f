"""Multi-room wake de-duplication: one wake word heard by several sites starts one run.

A person saying "okay nabu" between two rooms is heard by both microphones. Each site asks
the arbiter before it starts a run (``await arbiter.claim(site_id, detection, heard_at)``);
claims for the same wake word *heard* within ``window`` seconds of the first one form a round,
and one site of the round wins. A claim is placed by when the audio that completed the wake
word arrived (``AudioChunk.timestamp``), not by when its detector got to it: on a busy server a
site's detector may run seconds behind its audio, and the rounds must not depend on that.

- ``earliest``: the first claim wins at once (no added latency); later ones are ignored.
- ``loudest``: the round stays open for ``window`` seconds, then the highest wake score wins
  (ties: higher ``energy`` in the detection data if the wake stage reports it, then earliest).
  The nearest microphone usually hears the word most clearly, so its room gets the answer,
  at the cost of ``window`` seconds of wake latency.

Why 0.3 s by default: the same utterance reaches the detectors of two rooms at different
moments because of the satellite's audio chunking (wyoming-satellite sends 64 ms chunks), the
wake model's hop (openWakeWord scores every 80 ms and a far microphone may cross the
threshold a frame or two later) and Wi-Fi jitter (tens of ms): about 64 + 160 + 50 ms in the
worst usual case. Saying a wake word takes 0.5-1 s, so two genuine wakes can't fall within
0.3 s of each other; and in ``loudest`` mode 0.3 s is a delay people don't notice before the
listening chime.

Every ignored site gets a ``wake-ignored`` event naming the winner and the reason.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from voiced.events import Event, WakeIgnored
from voiced.stages import WakeDetection

ROUNDS_KEPT_S = 10.0  # a decided round still takes claims whose detectors ran this far behind


class ArbiterConfig(BaseModel):
    """``[arbiter]``: which site runs when several hear the same wake word."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    enabled: bool = True
    policy: Literal["earliest", "loudest"] = "earliest"
    window: float = Field(0.3, ge=0.0, le=5.0, description="seconds that make one round")
    match: Literal["same-word", "any-word"] = Field(
        "same-word", description="whether different wake words at once also compete"
    )


@dataclass
class _Claim:
    site_id: str
    detection: WakeDetection
    at: float

    def rank(self) -> tuple[float, float, float]:
        energy = self.detection.data.get("energy", 0.0)
        energy = float(energy) if isinstance(energy, int | float) else 0.0
        return (float(self.detection.score), energy, -self.at)


@dataclass
class _Round:
    key: str
    opened: float
    claims: dict[str, _Claim] = field(default_factory=dict)
    winner: str | None = None
    decided: asyncio.Event = field(default_factory=asyncio.Event)


class WakeArbiter:
    """Decides which site of a round of near-simultaneous wake detections runs."""

    def __init__(
        self,
        config: ArbiterConfig | None = None,
        emit: Callable[[Event], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config or ArbiterConfig()
        self.emit = emit or (lambda _event: None)
        self.clock = clock
        self._rounds: list[_Round] = []

    async def claim(
        self, site_id: str, detection: WakeDetection, heard_at: float | None = None
    ) -> bool:
        """True if ``site_id`` may start a run for this detection; False if another site won.

        ``heard_at``: when the audio that completed the wake word arrived (the arbiter's clock,
        ``time.monotonic`` by default); now when not given.
        """
        config = self.config
        if not config.enabled or config.window <= 0:
            return True
        now = self.clock()
        at = now if heard_at is None else min(heard_at, now)
        key = detection.name if config.match == "same-word" else "*"
        claim = _Claim(site_id, detection, at)
        current = self._round_of(key, at, now)
        if current is None:
            return await self._open(_Round(key, at), claim)
        if site_id in current.claims:  # the same site again (a second detector, a repeat)
            await current.decided.wait()
            return current.winner == site_id
        current.claims[site_id] = claim
        if current.decided.is_set():  # earliest: always; loudest: its detector came late
            self._ignored(current, claim, late=True)
            return False
        await current.decided.wait()
        return current.winner == site_id

    def _round_of(self, key: str, at: float, now: float) -> _Round | None:
        """The round a claim heard at ``at`` joins, if one is open or recently decided (rounds
        decided more than ``ROUNDS_KEPT_S`` ago are dropped here)."""
        self._rounds = [
            r for r in self._rounds if not r.decided.is_set() or now - r.opened <= ROUNDS_KEPT_S
        ]
        window = self.config.window
        return next(
            (r for r in self._rounds if r.key == key and abs(at - r.opened) <= window), None
        )

    async def _open(self, round_: _Round, claim: _Claim) -> bool:
        """A new round with ``claim`` first: won at once (earliest), or after the window."""
        self._rounds.append(round_)
        round_.claims[claim.site_id] = claim
        if self.config.policy == "earliest":
            self._decide(round_, claim.site_id)
            return True
        await asyncio.sleep(self.config.window)
        best = max(round_.claims.values(), key=_Claim.rank)
        self._decide(round_, best.site_id)
        return round_.winner == claim.site_id

    def _decide(self, round_: _Round, winner: str) -> None:
        round_.winner = winner
        round_.decided.set()
        for claim in round_.claims.values():
            if claim.site_id != winner:
                self._ignored(round_, claim)

    def _ignored(self, round_: _Round, claim: _Claim, late: bool = False) -> None:
        """Tell ``claim``'s site why it does not run (``late``: it joined a decided round)."""
        won = round_.claims[round_.winner or claim.site_id]
        if self.config.policy == "earliest" and claim.at >= won.at:
            reason = (
                f"{round_.winner} heard {won.detection.name!r} {claim.at - won.at:.3f} s earlier"
            )
        elif self.config.policy == "earliest":
            reason = (
                f"{round_.winner} claimed {won.detection.name!r} first, heard "
                f"{won.at - claim.at:.3f} s later (within the {self.config.window:g} s window)"
            )
        elif late:
            reason = (
                f"{round_.winner} won the round, decided {self.config.window:g} s after the "
                f"first claim, before this site's detector got to the word"
            )
        else:
            reason = (
                f"{round_.winner} heard {won.detection.name!r} louder "
                f"(score {won.detection.score:.3f} vs {claim.detection.score:.3f})"
            )
        ignored = WakeIgnored(
            name=claim.detection.name,
            score=round(float(claim.detection.score), 4),
            winner=round_.winner,
            winner_score=round(float(won.detection.score), 4),
            policy=self.config.policy,
            window=self.config.window,
            delay_s=round(claim.at - won.at, 4),
            reason=reason,
        )
        self.emit(ignored.event(None, claim.site_id))
