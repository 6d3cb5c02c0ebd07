"""Input shapes for cases, shared by the API and `manage.py import_cases`, so a
line of a JSONL file and an API batch are validated by exactly the same rules."""

from datetime import UTC, datetime
from typing import Literal

from pydantic import Field, field_validator, model_validator

from consoles.schemas import StrictIn

from .evidence import RELATIONS, TRUST_CLASSES

RelationName = Literal["supports", "contradicts"]
TrustClassName = Literal[
    "host_observed", "agent_adjacent", "model_internal", "independent_external", "human_reviewed"
]
assert set(RelationName.__args__) == set(RELATIONS)  # noqa: S101 - import-time drift guard
assert set(TrustClassName.__args__) == set(TRUST_CLASSES)  # noqa: S101

MAX_EVIDENCE_PER_CASE = 500
MAX_CASES_PER_BATCH = 500


class Strict(StrictIn):
    """A misspelt field name is an error, not silently dropped data; no NUL in text."""


def _not_blank(value: str) -> str:
    # min_length=1 lets "  " through: a case id or a claim of spaces is no value at all.
    if not value.strip():
        raise ValueError("must not be blank")
    return value


class ClaimIn(Strict):
    subject: str = Field(min_length=1, max_length=300)
    text: str = Field(min_length=1, max_length=20_000)

    _present = field_validator("subject", "text")(_not_blank)


class ReplayManifestIn(Strict):
    """What produced the case: enough to replay it, frozen into any feedback on it."""

    schema_version: int = Field(ge=1)
    fusion_policy_name: str = Field(min_length=1, max_length=200)
    fusion_policy_version: int = Field(ge=0)
    decision_policy_name: str = Field(min_length=1, max_length=200)
    decision_policy_version: int = Field(ge=0)
    adapter_provider: str = Field(min_length=1, max_length=200)
    adapter_runtime_version: str = Field(min_length=1, max_length=200)
    disabled_sensors: list[str] = Field(default_factory=list, max_length=500)


class EvidenceIn(Strict):
    evidence_id: str = Field(min_length=1, max_length=200)
    relation: RelationName
    trust_class: TrustClassName
    source_event_id: str | None = Field(default=None, max_length=200)
    correlation_group: str | None = Field(default=None, max_length=200)
    derived_from: list[str] = Field(default_factory=list, max_length=200)
    sensor: str = Field(default="", max_length=200)
    observed_at: datetime | None = None

    _present = field_validator("evidence_id")(_not_blank)

    @field_validator("observed_at")
    @classmethod
    def _aware(cls, value: datetime | None) -> datetime | None:
        if value is None:
            return None
        # Without an offset the time would be read in the server's zone: a guess stored as fact.
        if value.utcoffset() is None:
            raise ValueError("needs a time zone offset, e.g. 2026-11-02T09:00:00Z or +01:00")
        try:
            value.astimezone(UTC)
        except OverflowError:
            raise ValueError("is out of range once converted to UTC") from None
        return value

    @field_validator("source_event_id", "correlation_group")
    @classmethod
    def _blank_is_unknown(cls, value: str | None) -> str | None:
        # "" would otherwise look like a real, shared event or group.
        return value or None

    @field_validator("derived_from")
    @classmethod
    def _no_blank_parents(cls, value: list[str]) -> list[str]:
        if any(not item for item in value):
            raise ValueError("derived_from ids must be non-empty strings")
        return value


class CaseIn(Strict):
    case_id: str = Field(min_length=1, max_length=200)
    claim: ClaimIn
    local_verdict: str = Field(min_length=1, max_length=64)
    mined_by: list[str] = Field(default_factory=list, max_length=50)
    sanitization_altered_outcome: bool = False
    context: str | None = Field(default=None, max_length=200)
    replay_manifest: ReplayManifestIn
    evidence: list[EvidenceIn] = Field(default_factory=list, max_length=MAX_EVIDENCE_PER_CASE)

    _present = field_validator("case_id", "local_verdict")(_not_blank)

    @field_validator("mined_by")
    @classmethod
    def _strategies(cls, value: list[str]) -> list[str]:
        if any(not item.strip() for item in value):
            raise ValueError("mined_by strategies must be non-empty strings")
        return value

    @model_validator(mode="after")
    def _unique_evidence_ids(self) -> "CaseIn":
        seen: set[str] = set()
        for item in self.evidence:
            if item.evidence_id in seen:
                raise ValueError(f"evidence id {item.evidence_id!r} appears twice")
            seen.add(item.evidence_id)
        return self


class CaseBatchIn(Strict):
    application_id: str | None = Field(
        default=None, description="Application slug; required for personal tokens and sessions."
    )
    cases: list[CaseIn] = Field(min_length=1, max_length=MAX_CASES_PER_BATCH)
