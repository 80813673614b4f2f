"""Home Assistant's response templates (Jinja2), rendered the way Home Assistant renders them.

A template sees ``slots`` (the words the person used for each slot, plus ``timers``,
``canceled``, ``date``, ``time`` where they apply), ``state`` (the first matched entity) and
``query`` (``matched``/``unmatched`` entities).
"""

from __future__ import annotations

import datetime as dt
import logging
import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

from jinja2 import StrictUndefined, TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment
from voiced_plugins.intent_hassil.home import Entity

from voiced.api.intents import Intent
from voiced.api.languages import primary

log = logging.getLogger(__name__)


@lru_cache(maxsize=1)
def _env() -> ImmutableSandboxedEnvironment:
    # Strict, as Home Assistant's own test harness: a template that needs an entity state
    # when none matched fails (and the caller falls back) instead of saying "None".
    return ImmutableSandboxedEnvironment(undefined=StrictUndefined)


@lru_cache(maxsize=512)
def _compile(template: str) -> Any:
    return _env().from_string(template)


def render(
    template: str,
    slots: dict[str, Any],
    matched: Iterable[Entity] = (),
    unmatched: Iterable[Entity] = (),
    **extra: Any,
) -> str:
    """Render one response template; whitespace collapsed like Home Assistant does."""
    matched, unmatched = list(matched), list(unmatched)
    first = matched[0] if matched else (unmatched[0] if unmatched else None)
    values = {**slots, **extra}
    values.setdefault("timers", [])
    values.setdefault("canceled", 0)
    now = dt.datetime.now()
    values.setdefault("date", now.date())
    values.setdefault("time", now.time())
    views = {e.id: _StateView(e) for e in [*matched, *unmatched]}

    def state_attr(entity_id: str, name: str) -> Any:
        view = views.get(entity_id)
        return view.attributes.get(name) if view is not None else None

    text = _compile(template).render(
        slots=values,
        state_attr=state_attr,
        state=_StateView(first) if first else None,
        query={"matched": [_StateView(e) for e in matched],
               "unmatched": [_StateView(e) for e in unmatched],
               "total_results": len(matched) + len(unmatched)},
    )  # fmt: skip
    return without_spaces_in_cjk(" ".join(text.split()))


_SPACE_BY_CJK = re.compile(
    r"(?<=[\u3000-\u303f\u3400-\u9fff\uff00-\uffef])[ \t]+"
    r"|[ \t]+(?=[\u3000-\u303f\u3400-\u9fff\uff00-\uffef])"
)


def without_spaces_in_cjk(text: str) -> str:
    """No space beside a Chinese or Japanese character or mark: Home Assistant's zh templates
    put ASCII spaces around slot values ("在 儿童房 区域"), which Chinese does not write."""
    return _SPACE_BY_CJK.sub("", text)


DOMAIN_WORDS: dict[str, dict[str, str]] = {
    "zh": {
        "alarm_control_panel": "报警器", "binary_sensor": "传感器", "camera": "摄像头",
        "climate": "空调", "cover": "窗帘", "fan": "风扇", "humidifier": "加湿器",
        "input_boolean": "开关", "lawn_mower": "割草机", "light": "灯", "lock": "门锁",
        "media_player": "媒体播放器", "scene": "场景", "script": "脚本", "sensor": "传感器",
        "siren": "警报器", "switch": "开关", "todo": "待办事项", "vacuum": "扫地机器人",
        "valve": "阀门", "water_heater": "热水器", "weather": "天气预报",
    },
}  # fmt: skip
"""A device kind in words, for languages whose error templates say the domain itself
(zh-CN: "没有找到 {{ domain }} 设备"); German's templates translate it themselves."""


def domain_word(domain: str, language: str) -> str:
    """``domain`` as ``language`` names that kind of device (the domain itself otherwise)."""
    return DOMAIN_WORDS.get(primary(language), {}).get(domain, domain)


def template_slots(intent: Intent) -> dict[str, Any]:
    """What templates call ``slots``: the spoken text of each slot (as HA), else its value."""
    spoken = intent.data.get("slot_text") or {}
    return {name: spoken.get(name) or value for name, value in intent.slots.items()}


def response_for(
    intent: Intent,
    responses: dict[str, dict[str, str]],
    matched: Iterable[Entity] = (),
    unmatched: Iterable[Entity] = (),
    **extra: Any,
) -> str | None:
    """The intent's own response (``data['response']``, else ``default``), or None."""
    templates = responses.get(intent.name) or {}
    key = intent.data.get("response") or "default"
    template = templates.get(key, templates.get("default"))
    if template is None:
        return None
    try:
        return render(template, template_slots(intent), matched, unmatched, **extra)
    except (TemplateError, TypeError, ValueError, KeyError, AttributeError) as exc:
        log.warning("response %s/%s failed to render: %s", intent.name, key, exc)
        return None


class _StateView:
    """An entity as Home Assistant templates see a state object."""

    def __init__(self, entity: Entity) -> None:
        self.entity_id = entity.id
        self.name = entity.name
        self.domain = entity.domain
        self.state = entity.human_state if entity.human_state is not None else entity.state
        self.attributes = entity.attributes
        self.state_with_unit = entity.state_with_unit

    def __eq__(self, other: object) -> bool:  # templates compare `state == "not_home"`
        return self.state == other if isinstance(other, str) else self is other

    __hash__ = object.__hash__

    def __str__(self) -> str:
        return self.state
