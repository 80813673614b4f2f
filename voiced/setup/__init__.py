"""``voiced setup``: a guided first run, interactive in a terminal, scriptable with flags.

One module per question, each asking through :class:`~voiced.setup.console.Console` (which
takes a flag's value, asks in a terminal, or fails with a clear error when neither is possible)
and checking the answer against the real thing (the sound card, Home Assistant's API, the
broker) before it is kept:

- :mod:`~voiced.setup.console`: asking, answering from flags, the ✓ / ! / ✗ lines
- :mod:`~voiced.setup.answers`: what setup has learned (one dataclass)
- :mod:`~voiced.setup.language`: the household's language and the extra it needs
- :mod:`~voiced.setup.devices`: microphones and speakers, a 3 s recording and its level
- :mod:`~voiced.setup.hearing`: what voiced heard in the recording, and a test sentence played
- :mod:`~voiced.setup.home_assistant`: finding Home Assistant and checking the token
- :mod:`~voiced.setup.mqtt`: the broker (probe, credentials, TLS)
- :mod:`~voiced.setup.wake`: the wake words (pyopen-wakeword's bundled ones)
- :mod:`~voiced.setup.offers`: what voiced offers Home Assistant (Wyoming, ESPHome)
- :mod:`~voiced.setup.config_file`: the commented config, written with a backup
- :mod:`~voiced.setup.live_check`: "say 'okay nabu, what time is it'", stage by stage
- :mod:`~voiced.setup.flow`: the order of the questions
- :mod:`~voiced.setup.command`: the command line
"""

from voiced.setup.command import HELP, configure_setup_parser, run_setup

__all__ = ["HELP", "configure_setup_parser", "run_setup"]
