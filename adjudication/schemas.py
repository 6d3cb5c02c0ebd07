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
    subject: str = Field(min_length=1, max_length=300, description="What the claim is about.")
    text: str = Field(min_length=1, max_length=20_000, description="The claim.")

    _present = field_validator("subject", "text")(_not_blank)


class ReplayManifestIn(Strict):
    """What produced the case: enough to replay it, frozen into any feedback on it."""

    schema_version: int = Field(ge=1, description="The manifest's schema version.")
    fusion_policy_name: str = Field(min_length=1, max_length=200, description="The pipeline's fusion policy.")
    fusion_policy_version: int = Field(ge=0, description="Its version.")
    decision_policy_name: str = Field(min_length=1, max_length=200, description="The pipeline's decision policy.")
    decision_policy_version: int = Field(ge=0, description="Its version.")
    adapter_provider: str = Field(min_length=1, max_length=200, description="The model provider's adapter.")
    adapter_runtime_version: str = Field(min_length=1, max_length=200, description="The adapter's runtime version.")
    disabled_sensors: list[str] = Field(default_factory=list, max_length=500,
                                        description="Sensors that were off for the run.")


class EvidenceIn(Strict):
    evidence_id: str = Field(min_length=1, max_length=200, description="Unique within the case.")
    relation: RelationName = Field(description="What the evidence says about the claim.")
    trust_class: TrustClassName = Field(description="How far it can be trusted; `model_internal` never votes. "
                                 "`human_reviewed` only from a person (session or personal token): an application "
                                 "token sending it is refused (422, `human_only`).")
    source_event_id: str | None = Field(default=None, max_length=200, description="The event it was read from: "
                                        "evidence sharing one counts as one source.")
    correlation_group: str | None = Field(default=None, max_length=200,
                                          description="A group known to share a source (counts as one).")
    derived_from: list[str] = Field(default_factory=list, max_length=200,
                                    description="Evidence ids of this case it was derived from "
                                    "(non-empty strings).")
    sensor: str = Field(default="", max_length=200, description="The sensor that produced it.")
    observed_at: datetime | None = Field(default=None, description="When it was observed, with a time zone "
                                         "offset (`2026-11-02T09:00:00Z`); a time without one is refused.")

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
    case_id: str = Field(min_length=1, max_length=200, description="The pipeline's case id: importing it again "
                         "with the same content is a no-op, with other content a 409.")
    claim: ClaimIn = Field(description="The claim under review.")
    local_verdict: str = Field(min_length=1, max_length=64, description="The verdict the pipeline reached locally.")
    mined_by: list[str] = Field(default_factory=list, max_length=50, description="The strategies that found it (not blank).")
    sanitization_altered_outcome: bool = Field(False, description="Whether sanitising the input changed the outcome.")
    context: str | None = Field(default=None, max_length=200, description="The pipeline's context label.")
    replay_manifest: ReplayManifestIn = Field(description="What produced the case: frozen into any feedback on it.")
    evidence: list[EvidenceIn] = Field(default_factory=list, max_length=MAX_EVIDENCE_PER_CASE,
                                       description="The evidence records, ids unique within the case.")

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
    cases: list[CaseIn] = Field(min_length=1, max_length=MAX_CASES_PER_BATCH,
                                description=f"1 to {MAX_CASES_PER_BATCH} cases, imported all or nothing.")
