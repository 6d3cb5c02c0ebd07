"""The sampling app's home card and demo data."""

from datetime import timedelta

from django.urls import reverse
from django.utils import timezone

from consoles.errors import DomainError
from consoles.extensions import HomeCard
from consoles.models import Application

from .models import SamplingPlan
from .selectors import plans_waiting_count
from .services import plan_create, plan_enqueue

DEMO_BUDGET = 8
# The demo plan lives in the agent verifier; its cases are imported through the
# adjudication app's own service only when that application has no case yet
# (so a richer adjudication demo, if any, is sampled instead).
DEMO_APPLICATION = "globex-verifier"
_MANIFEST = {
    "schema_version": 1, "fusion_policy_name": "console-common-source-collapse",
    "fusion_policy_version": 1, "decision_policy_name": "default", "decision_policy_version": 1,
    "adapter_provider": "demo", "adapter_runtime_version": "1.0.0", "disabled_sensors": [],
}
_EVIDENCE = {
    # name: [(relation, trust_class, source_event_id)]
    "agreeing": [("supports", "host_observed", "tree"), ("supports", "independent_external", "ci")],
    "conflict": [("supports", "agent_adjacent", "turn"), ("contradicts", "host_observed", "tree")],
    "self_only": [("supports", "model_internal", "turn")],
    "unverified": [("supports", "host_observed", None), ("supports", "independent_external", "ci")],
    "none": [],
}
_DEMO_CASES = [
    # case id, subject, verdict, mined_by, sanitised, evidence
    ("gv-001", "git commit", "corroborated", ["sensor_disagreement"], False, "conflict"),
    ("gv-002", "git commit", "corroborated", ["sensor_disagreement"], False, "conflict"),
    ("gv-003", "git commit", "corroborated", ["sensor_disagreement"], False, "conflict"),
    ("gv-004", "git commit", "corroborated", ["sensor_disagreement"], False, "conflict"),
    ("gv-005", "test suite passed", "verified", ["high_uncertainty"], True, "self_only"),
    ("gv-006", "test suite passed", "verified", [], False, "agreeing"),
    ("gv-007", "package published", "qualified", ["verdict_changed_across_findings"], False, "unverified"),
    ("gv-008", "file deleted", "refuted", ["high_uncertainty", "sensor_disagreement"], False, "none"),
    ("gv-009", "config updated", "verified", [], False, "agreeing"),
    ("gv-010", "config updated", "verified", [], False, "agreeing"),
    ("gv-011", "service restarted", "corroborated", ["high_uncertainty"], False, "agreeing"),
    ("gv-012", "branch merged", "verified", [], True, "agreeing"),
]


def sampling_home_cards(application: Application) -> list[HomeCard]:
    return [
        HomeCard(
            title="Sampling plans to enqueue",
            count=plans_waiting_count(application=application),
            caption="plans made but not yet put into the adjudication queue",
            url=reverse("sampling:index", args=[application.slug]),
        )
    ]


def _demo_cases(application: Application) -> None:
    from adjudication.models import Case
    from adjudication.schemas import CaseIn
    from adjudication.services import case_import_batch

    if Case.objects.filter(application=application).exists():
        return
    cases = [
        CaseIn(
            case_id=case_id,
            claim={"subject": subject, "text": f"The agent reports: {subject}."},
            local_verdict=verdict,
            mined_by=mined_by,
            sanitization_altered_outcome=sanitised,
            replay_manifest=_MANIFEST,
            evidence=[
                {"evidence_id": f"e{i}", "relation": relation, "trust_class": trust,
                 "source_event_id": f"{case_id}-{event}" if event else None, "sensor": trust}
                for i, (relation, trust, event) in enumerate(_EVIDENCE[evidence], start=1)
            ],
        )
        for case_id, subject, verdict, mined_by, sanitised, evidence in _DEMO_CASES
    ]
    case_import_batch(application=application, cases=cases, actor=None)


# The first selections of the verifier's plan get labels, as curators working the
# queue would: (rank, curator, label). `unreliable` on an affirming verdict is an
# answer the humans changed; `reliable` one they confirmed.
_DEMO_LABELS = [
    (1, "curator", "unreliable"), (1, "curator2", "unreliable"),
    (2, "curator", "reliable"), (2, "curator2", "reliable"),
    (3, "curator", "contradicted"),
    (4, "curator2", "reliable"),
]


def load_demo(*, application: Application, users: dict) -> None:
    """The verifier's plan, made a week ago, enqueued and partly labelled since;
    idempotent (one plan at most)."""
    if application.slug != DEMO_APPLICATION:
        return
    if SamplingPlan.objects.filter(application=application).exists():
        return
    _demo_cases(application)
    now = timezone.now()
    try:
        plan, _ = plan_create(application=application, budget=DEMO_BUDGET, actor=users["curator"],
                              at=now - timedelta(days=7))
    except DomainError:
        # No case to sample in this application's demo data: nothing to show.
        return
    plan_enqueue(plan=plan, actor=users["curator"], at=now - timedelta(days=6, hours=20))
    _label_some(application, plan, users, now)


def _label_some(application: Application, plan: SamplingPlan, users: dict, now) -> None:
    from adjudication.services import label_submit

    selections = {s.rank: s for s in plan.selections.select_related("case")}
    for i, (rank, username, label) in enumerate(_DEMO_LABELS):
        selection = selections.get(rank)
        if selection is None or selection.case is None:
            continue
        label_submit(application=application, case=selection.case, reviewer=users[username], label=label,
                     rationale="Worked the sampled queue: compared the host evidence with the verdict.",
                     at=now - timedelta(days=6 - i, hours=3))


def load_demo_after_cases(*, application: Application, users: dict) -> None:
    """A second, newer plan in the chat assistant, over the adjudication demo's
    cases (hence after that loader): made two days ago, not enqueued yet."""
    if application.slug != "acme-chat" or SamplingPlan.objects.filter(application=application).exists():
        return
    try:
        plan_create(application=application, budget=6, actor=users["curator2"], at=timezone.now() - timedelta(days=2))
    except DomainError:
        return
