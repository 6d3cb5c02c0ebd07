"""Cases with evidence and gold labels, shaped for the sampling tests."""

from adjudication.models import CaseLabel, GoldLabelRevision
from adjudication.tests.factories import CaseFactory, EvidenceFactory
from consoles.tests.factories import UserFactory


def make_case(
    application,
    case_id: str,
    *,
    subject: str | None = None,
    verdict: str = "corroborated",
    mined_by: tuple[str, ...] = (),
    sanitized: bool = False,
    evidence: str = "clean",
):
    """A case whose evidence gives known gaps.

    evidence="clean": two independent host observations agree (no gap);
    "conflict": independent sources disagree (unresolved_conflict);
    "none": no evidence (no_evidence_at_all).
    """
    case = CaseFactory(
        application=application,
        case_id=case_id,
        claim_subject=subject or f"subject of {case_id}",
        local_verdict=verdict,
        mined_by=list(mined_by),
        sanitization_altered_outcome=sanitized,
    )
    if evidence == "clean":
        EvidenceFactory(case=case, position=0, evidence_id="e1", relation="supports",
                        trust_class="host_observed", source_event_id=f"{case_id}-a")
        EvidenceFactory(case=case, position=1, evidence_id="e2", relation="supports",
                        trust_class="independent_external", source_event_id=f"{case_id}-b")
    elif evidence == "conflict":
        EvidenceFactory(case=case, position=0, evidence_id="e1", relation="supports",
                        trust_class="host_observed", source_event_id=f"{case_id}-a")
        EvidenceFactory(case=case, position=1, evidence_id="e2", relation="contradicts",
                        trust_class="independent_external", source_event_id=f"{case_id}-b")
    elif evidence != "none":
        raise ValueError(evidence)
    return case


def give_gold_label(case, label: str, reviewer=None) -> GoldLabelRevision:
    reviewer = reviewer or UserFactory(username="gold-reviewer")
    based_on = CaseLabel.objects.create(
        application=case.application, case=case, reviewer=reviewer, label=label, rationale="checked"
    )
    return GoldLabelRevision.objects.create(
        application=case.application, case=case, revision=1, label=label,
        promoted_by=reviewer, based_on=based_on,
    )
