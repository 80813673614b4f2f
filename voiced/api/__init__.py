"""voiced's public API for plugins: the only ``voiced`` modules a plugin imports.

* ``voiced.api.hooks``: ``hookimpl`` and the hook specs (types, firstresult, thread, timeout)
* ``voiced.api.app``: ``Assistant`` (the daemon as ``app``), ``Run``, ``RunContext``, ``Phase``
* ``voiced.api.events``: ``Event``, ``EventType`` and one typed payload per event type
* ``voiced.api.stages``: the contract of each stage kind (``Source``, ``Wake``, ``Asr``, ...)
* ``voiced.api.audio``: ``AudioFormat``, ``AudioChunk``, conversion at the edge
* ``voiced.api.intents``: ``Transcript``, ``Intent``, ``Response``
* ``voiced.api.recognition``: ``Decoder``, ``HomeGrammar``, ``Decision`` (the recognizer's contract)
* ``voiced.api.speakers``: ``VoiceBook`` (the enrolled voices), ``SpeakerMatch``, ``MatchRule``
* ``voiced.api.text``: sentence splitting, credentials out of shown URLs
* ``voiced.api.languages``: language tags, and what each stage calls a language
* ``voiced.api.devices``: ROCm/CUDA/CPU choice; ``voiced.api.logs``: journal fields
* ``voiced.api.config``: ``Settings``, ``ConfigError``; ``voiced.api.doctor``: ``Check``
* ``voiced.api.host``: stages outside the daemon, for a plugin's own process (a worker)
* ``voiced.api.net``: ``reached_itself`` (a dialled connection that is its own peer)

Each module re-exports names from the core module behind it (no copies); tests/test_api.py
fails when a plugin imports any other part of the core.
"""
