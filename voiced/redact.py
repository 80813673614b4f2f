"""Credentials out of what is shown: URLs with ``user:password@`` in config output, logs, events."""

from __future__ import annotations

import re
from urllib.parse import unquote, urlsplit, urlunsplit

# scheme://user:password@ (the password is everything up to the last @ of the authority)
_USERINFO = re.compile(r"(?P<head>[a-zA-Z][a-zA-Z0-9+.-]*://[^\s/:@]*):(?P<secret>[^\s/]*)@")


def redact_urls(text: str) -> str:
    """Every ``scheme://user:password@`` in ``text`` with the password replaced by ``***``."""
    return _USERINFO.sub(lambda m: f"{m['head']}:***@", text)


def split_credentials(url: str) -> tuple[str, str | None, str | None]:
    """``(url without user info, user, password)``: the credentials travel in a header."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url, None, None
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 literal
        host = f"[{host}]"
    netloc = f"{host}:{parts.port}" if parts.port else host
    bare = urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
    user = unquote(parts.username) if parts.username is not None else None
    password = unquote(parts.password) if parts.password is not None else None
    return bare, user, password
