"""``voiced doctor``: is Home Assistant reachable with the token, and is the cached home there?"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Any

from voiced.api.doctor import Check

from .home_source import HomeSourceOptions, cache_path, read_cache
from .http_reply import read_reply
from .options import HomeAssistantConfigError

SECTION = "home assistant"


def home_assistant_checks(options: HomeSourceOptions) -> list[Check]:
    return [api_check(options), cache_check(options)]


def api_check(options: HomeSourceOptions) -> Check:
    name = f"Home Assistant at {options.url}"
    try:
        token = options.access_token()
    except HomeAssistantConfigError as exc:
        return Check(name, False, str(exc), "set token_file under [stages.service.home-assistant]",
                     section=SECTION)  # fmt: skip
    request = urllib.request.Request(
        f"{options.url}/api/config", headers={"Authorization": f"Bearer {token}"}
    )
    try:
        with urllib.request.urlopen(
            request, timeout=min(options.timeout, 5.0), context=options.ssl_context()
        ) as reply:
            config = json.loads(read_reply(reply, options.max_reply_bytes, 5.0))
    except urllib.error.HTTPError as exc:
        fix = "make a new long-lived access token" if exc.code == 401 else ""
        return Check(name, False, f"answered {exc.code} {exc.reason}", fix, section=SECTION)
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return Check(
            name, False, f"unreachable: {reason}",
            "start Home Assistant or fix the url; voiced recognizes the cached home meanwhile",
            section=SECTION,
        )  # fmt: skip
    return Check(name, True, f"Home Assistant {config.get('version', '?')}, token accepted",
                 section=SECTION)  # fmt: skip


def cache_check(options: HomeSourceOptions) -> Check:
    path = cache_path(options)
    cached = read_cache(path)
    if cached is None:
        return Check(
            "cached home", None, f"none yet at {path}",
            "it is written the first time voiced loads the home from Home Assistant",
            section=SECTION,
        )  # fmt: skip
    home: dict[str, Any] = cached["home"]
    age = time.time() - float(cached.get("saved") or 0)
    return Check(
        "cached home", True,
        f"{len(home.get('entities', []))} entities, {len(home.get('areas', []))} areas, "
        f"saved {age / 3600:.1f} h ago in {path} (used while Home Assistant is down)",
        section=SECTION,
    )  # fmt: skip
