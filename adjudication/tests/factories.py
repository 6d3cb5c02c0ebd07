"""Factories for the adjudication app; related rows stay on one application."""

import hashlib

import factory

from adjudication.models import Case, CaseLabel, Evidence, GoldLabelRevision, QueueEntry
from consoles.tests.factories import ApplicationFactory, UserFactory

MANIFEST = {
    "schema_version": 1,
    "fusion_policy_name": "baseline",
    "fusion_policy_version": 2,
    "decision_policy_name": "default",
    "decision_policy_version": 1,
    "adapter_provider": "claude",
    "adapter_runtime_version": "1.4.0",
    "disabled_sensors": [],
}


def case_payload(case_id: str = "case-1", *, evidence: list[dict] | None = None, **overrides) -> dict:
    """A valid API / JSONL case document."""
    payload = {
        "case_id": case_id,
        "claim": {"subject": "git commit", "text": "The agent committed the fix."},
        "local_verdict": "corroborated",
        "mined_by": ["sensor_disagreement"],
        "sanitization_altered_outcome": False,
        "context": "cohort-a",
        "replay_manifest": dict(MANIFEST),
        "evidence": evidence
        if evidence is not None
        else [
            {"evidence_id": "e1", "relation": "supports", "trust_class": "agent_adjacent", "source_event_id": "evt-1", "sensor": "bash_exit"},
            {"evidence_id": "e2", "relation": "supports", "trust_class": "agent_adjacent", "source_event_id": "evt-1", "sensor": "git_outcome"},
            {"evidence_id": "e3", "relation": "contradicts", "trust_class": "host_observed", "source_event_id": "evt-1", "sensor": "git_tree"},
        ],
    }
    payload.update(overrides)
    return payload


class CaseFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Case

    application = factory.SubFactory(ApplicationFactory)
    case_id = factory.Sequence(lambda n: f"case-{n}")
    claim_subject = "git commit"
    claim_text = "The agent committed the fix."
    local_verdict = "corroborated"
    mined_by = factory.LazyFunction(lambda: ["high_uncertainty"])
    replay_manifest = factory.LazyFunction(lambda: dict(MANIFEST))
    digest = factory.LazyAttribute(lambda c: hashlib.sha256(c.case_id.encode()).hexdigest())


class EvidenceFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Evidence

    case = factory.SubFactory(CaseFactory)
    position = factory.Sequence(lambda n: n)
    evidence_id = factory.Sequence(lambda n: f"ev-{n}")
    relation = "supports"
    trust_class = "host_observed"
    sensor = "probe"


class QueueEntryFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = QueueEntry

    case = factory.SubFactory(CaseFactory)
    application = factory.SelfAttribute("case.application")
    selection_reason = "manual"


class CaseLabelFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = CaseLabel

    case = factory.SubFactory(CaseFactory)
    application = factory.SelfAttribute("case.application")
    reviewer = factory.SubFactory(UserFactory)
    label = "reliable"
    rationale = "The host saw the commit."


class GoldLabelRevisionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = GoldLabelRevision

    based_on = factory.SubFactory(CaseLabelFactory)
    case = factory.SelfAttribute("based_on.case")
    application = factory.SelfAttribute("based_on.application")
    revision = 1
    label = factory.SelfAttribute("based_on.label")
    promoted_by = factory.SelfAttribute("based_on.reviewer")
