"""The runs at one site and the state they add up to: idle, listening, thinking, speaking.

Every site id that runs happen at has one: an audio ``Site`` (microphone, file, satellite) is
one, and a site without audio of its own (a Wyoming request, ``say`` at a room with no
microphone) gets a plain ``SiteRuns``. The ``state`` event (state and muted) is emitted here
and nowhere else; it is what MQTT's retained state topics mirror.
"""

from __future__ import annotations

from collections.abc import Callable

from voiced import events as ev
from voiced.events import Event
from voiced.run import Phase, Run


class SiteRuns:
    """Follows the runs at a site; emits ``state`` whenever the derived state or mute changes."""

    def __init__(self, site_id: str, emit: Callable[[Event], None], muted: bool = False) -> None:
        self.site_id = site_id
        self.emit = emit
        self.muted = muted
        self.runs: dict[str, Run] = {}  # runs not ended yet, by run id
        self.state = "idle"
        self._published: tuple[str, bool] | None = None
        self.update_state()  # the first state event says the site exists (and if it is muted)

    def adopt(self, run: Run) -> Run:
        """Follow a run at this site (its phase changes update the site's state)."""
        self.runs[run.run_id] = run
        return run.follow(self._run_changed)

    def _run_changed(self, run: Run) -> None:
        if run.ended:
            self.runs.pop(run.run_id, None)
        self.update_state()

    def _in(self, phase: Phase) -> bool:
        return any(r.phase == phase and not r.background for r in self.runs.values())

    @property
    def playing_media(self) -> bool:
        """Media plays here in the background (it is none of the site's states)."""
        return any(r.background for r in self.runs.values())

    @property
    def busy(self) -> bool:
        """The site listens, thinks or speaks (media playing here is lowered meanwhile)."""
        return any(not r.background for r in self.runs.values()) or self.awake()

    @property
    def speaking(self) -> bool:
        return self._in(Phase.SPEAKING)

    @property
    def thinking(self) -> bool:
        return self._in(Phase.THINKING)

    def awake(self) -> bool:
        """Listening for a command without a run yet (an audio site after a wake word)."""
        return False

    def update_state(self) -> None:
        if self.speaking:
            state = "speaking"
        elif self.thinking:
            state = "thinking"
        elif self._in(Phase.LISTENING) or self.awake():
            state = "listening"
        else:
            state = "idle"
        self.state = state
        if (state, self.muted) != self._published:
            self._published = (state, self.muted)
            self.emit(ev.State(state, self.muted).event(None, self.site_id))
