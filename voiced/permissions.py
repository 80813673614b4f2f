"""Who may do what: per-intent, per-domain and per-entity rules over the speaker's name.

No rule: everyone may do everything. A rule names an intent, a domain and/or an entity (all
that it names must match the command) and who may (``allow``, ``unknown`` included for a
voice nobody enrolled). A command is refused when a rule matches it and does not allow the
speaker; with several matching rules, each must allow the speaker.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from voiced.intents import Intent
from voiced.speakers import UNKNOWN, MatchRule

ANYONE = "anyone"
# Chosen on the tuning split of benchmarks/speakers.py (docs/speakers.md has the figures).
DEFAULT_THRESHOLD = 0.028
DEFAULT_STRANGER = 0.3
DEFAULT_ALONE = 0.635


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class PermissionRule(Strict):
    """One ``[[speakers.permissions]]`` entry."""

    intent: str | None = Field(None, description="an intent name, e.g. HassTurnOff")
    domain: str | None = Field(None, description="an entity domain, e.g. lock")
    entity: str | None = Field(None, description="an entity id, e.g. lock.front_door")
    allow: list[str] = Field(
        description=f"speaker names that may ({UNKNOWN!r}: an unrecognized voice; "
        f"{ANYONE!r}: everybody)"
    )

    @field_validator("allow")
    @classmethod
    def _names(cls, value: list[str]) -> list[str]:
        return [" ".join(v.strip().lower().split()) for v in value]

    @model_validator(mode="after")
    def _targets_something(self) -> PermissionRule:
        if self.intent is None and self.domain is None and self.entity is None:
            raise ValueError("a permission rule needs an intent, a domain or an entity")
        return self

    def matches(self, intent: Intent) -> bool:
        entities, domains = targets(intent)
        return (
            (self.intent is None or self.intent == intent.name)
            and (self.domain is None or self.domain in domains)
            and (self.entity is None or self.entity in entities)
        )

    def describe(self) -> str:
        parts = [f"{k}={v}" for k in ("intent", "domain", "entity") if (v := getattr(self, k))]
        return " ".join(parts)


def targets(intent: Intent) -> tuple[set[str], set[str]]:
    """The entity ids and domains a command acts on, as far as its recognizer resolved them."""
    entities = {str(e) for e in intent.data.get("entities") or [] if isinstance(e, str)}
    domains = {e.split(".", 1)[0] for e in entities if "." in e}
    for value in (intent.slots.get("domain"), (intent.data.get("context") or {}).get("domain")):
        values = value if isinstance(value, list) else [value]
        domains.update(str(v) for v in values if isinstance(v, str))
    return entities, domains


@dataclass(frozen=True)
class Refusal:
    """A command a speaker may not give."""

    speaker: str
    rule: PermissionRule

    def to_dict(self) -> dict[str, Any]:
        return {"speaker": self.speaker, "rule": self.rule.describe(), "allow": self.rule.allow}


def check(rules: list[PermissionRule], intent: Intent, speaker: str | None) -> Refusal | None:
    """None when ``speaker`` may give this command, else the first rule that refuses it."""
    who = speaker or UNKNOWN
    for rule in rules:
        if rule.matches(intent) and who not in rule.allow and ANYONE not in rule.allow:
            return Refusal(who, rule)
    return None


class SpeakersConfig(Strict):
    """``[speakers]``: who is speaking (``pipeline.speaker`` names the encoder) and what each
    person may do."""

    threshold: float = Field(
        DEFAULT_THRESHOLD,
        ge=-2.0,
        le=2.0,
        description="how much closer an utterance must be to the closest enrolled voice than "
        "to the runner-up (or the stranger/alone floor) to be named; else it is unknown",
    )
    stranger: float = Field(
        DEFAULT_STRANGER,
        ge=-1.0,
        le=1.0,
        description="similarity a voice nobody enrolled typically reaches: the runner-up "
        "counts as at least this",
    )
    alone: float = Field(
        DEFAULT_ALONE,
        ge=-1.0,
        le=1.0,
        description="the runner-up's similarity when only one voice is enrolled",
    )
    file: str = Field(
        "speakers.json",
        description="the enrolled voices (embeddings only, mode 600); relative: in the state "
        "directory ($STATE_DIRECTORY, else ~/.local/state/voiced)",
    )
    min_similarity: float = Field(
        -1.0,
        ge=-1.0,
        le=1.0,
        description="the least cosine similarity with the closest enrolled voice that may name "
        "it; off (-1) by default: 0.8 turns away most voices nobody enrolled, and about half "
        "of the enrolled ones too (docs/speakers.md)",
    )
    refused: str = Field(
        "Sorry {speaker}, you are not allowed to do that.",
        description="the answer to a refused command of a known speaker ({speaker}: the name)",
    )
    refused_unknown: str = Field(
        "Sorry, I don't recognize your voice, so I can't do that.",
        description="the answer to a refused command of an unknown voice",
    )
    permissions: list[PermissionRule] = Field(
        default_factory=list, description="who may do what; none: everyone may do everything"
    )

    def rule(self) -> MatchRule:
        return MatchRule(self.threshold, self.stranger, self.alone, self.min_similarity)

    def refusal_text(self, speaker: str) -> str:
        if speaker == UNKNOWN:
            return self.refused_unknown
        return self.refused.replace("{speaker}", speaker.title())
