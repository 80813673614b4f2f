"""``python -m voiced.doctor``: the same as ``voiced doctor``."""

from __future__ import annotations

import sys

# the package's main, so plugins' ``voiced.doctor.Check`` is this Check
from voiced.doctor import main

if __name__ == "__main__":
    sys.exit(main())
