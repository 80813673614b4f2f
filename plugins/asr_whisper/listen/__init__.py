"""The recognizer: one driver (``driver.py``) over the ``voiced.api.recognition`` contract.

Each step is a module of its own: ``first`` (N-best and its choice), ``fallback`` (temperature
fallback), ``rescoring`` (the home's sentences scored against the audio, with the constrained
search), ``retry`` (the prompted retry), ``second_look`` (listening again after it). They read
and write one ``Listening`` (``state.py``); ``record.py`` makes the transcript of it.
"""
