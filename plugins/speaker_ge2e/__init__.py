"""``ge2e``: who is speaking, with resemblyzer's pretrained GE2E speaker encoder.

The weights are the 17 MB ``pretrained.pt`` inside the ``resemblyzer`` wheel, read without
torch (``checkpoint.py``) and run in numpy (``network.py``) with resemblyzer's own front end
(``features.py``), so a CPU-only home needs neither torch nor librosa:
``pip install --no-deps resemblyzer``. On a GPU that torch sees, the same weights run in torch.
"""

from __future__ import annotations

from typing import Any

from voiced.api.hooks import hookimpl

from .doctor import speaker_checks
from .encoder import Ge2eEncoder, Ge2eOptions


@hookimpl
def voiced_register_stages(register: Any) -> None:
    register(
        "speaker",
        "ge2e",
        Ge2eEncoder,
        options=Ge2eOptions,
        description="GE2E speaker encoder (resemblyzer's weights; numpy on CPU, torch on GPU)",
    )


@hookimpl
def voiced_doctor_checks(config: Any) -> list[Any]:
    return speaker_checks(config)
