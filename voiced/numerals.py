"""Chinese numerals as whole numbers and back ("三十" <-> 30), by cn2an (``voiced[languages]``)."""

from __future__ import annotations

import functools
import logging
from typing import Any

log = logging.getLogger(__name__)

CHINESE_NUMERALS = "零〇一二两三四五六七八九十百千万"
"""The characters Chinese numerals are written with."""


@functools.lru_cache(maxsize=1)
def _cn2an() -> Any:
    try:
        import cn2an
    except ImportError:
        log.warning(
            "cn2an is missing, so Chinese numerals (十分钟) are not read as numbers "
            "(pip install 'voiced[languages]')"
        )
        return None
    return cn2an


def chinese_number(numerals: str) -> int | float | None:
    """The number Chinese ``numerals`` write ("三十" -> 30), or None where they write none
    (or cn2an is missing)."""
    cn2an = _cn2an()
    if cn2an is None or not numerals:
        return None
    try:
        value = cn2an.cn2an(numerals, "smart")
    except (ValueError, KeyError):
        return None
    return int(value) if float(value).is_integer() else float(value)


def chinese_numerals(number: int) -> str | None:
    """``number`` in Chinese numerals (30 -> "三十"), or None where cn2an is missing."""
    cn2an = _cn2an()
    return None if cn2an is None else str(cn2an.an2cn(number))
