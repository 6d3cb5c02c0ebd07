"""Demo cases for `make run` (manage.py load_demo). Idempotent: every step checks
what is already there, so a second run changes nothing.

acme-chat gets 30 cases: 24 double-labelled by `curator` and `curator2` (enough
for kappa), 3 labelled once and waiting in the queue for a second label, 3 more
in the queue, gold labels on 22 (past the 20-case gate of the sampling
comparison; some with two revisions). globex-verifier gets 12.

The labels and gold labels are given over the past three weeks (the demo clock),
a case or so a day, so the overview shows agreement and gold labels over time
and the day kappa passed its 20-case gate.
"""

from datetime import UTC, datetime, timedelta

from django.contrib.auth.models import AbstractBaseUser
from django.utils import timezone

from consoles.models import ApiToken, Application
from feedback.models import CaseFeedback
from feedback.services import Actor, case_feedback_submit

from .models import CaseLabel, GoldLabelRevision
from .schemas import CaseIn
from .services import case_import, gold_promote, label_submit, queue_enqueue

T0 = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)

MANIFEST = {
    "schema_version": 1,
    "fusion_policy_name": "baseline",
    "fusion_policy_version": 2,
    "decision_policy_name": "default-decision",
    "decision_policy_version": 1,
    "adapter_provider": "claude",
    "adapter_runtime_version": "1.4.2",
    "disabled_sensors": [],
}

SUBJECTS = [
    ("git commit", "The agent committed the fix to the release branch."),
    ("file write", "The agent wrote the updated config to disk."),
    ("test run", "The agent ran the test suite and it passed."),
    ("package install", "The agent installed the pinned dependency."),
    ("migration", "The agent applied the database migration."),
    ("email draft", "The assistant's answer cites the refund policy correctly."),
]


def _ev(i: int, relation: str, trust: str, **kw) -> dict:
    return {"evidence_id": f"ev-{i}", "relation": relation, "trust_class": trust, **kw}


def _evidence(shape: int, n: int) -> list[dict]:
    at = (T0 + timedelta(minutes=n)).isoformat()
    event = f"evt-{n:04d}"
    if shape == 0:  # one agent turn read by three sensors, a host probe disagrees
        return [
            _ev(1, "supports", "agent_adjacent", source_event_id=event, sensor="bash_exit_code", observed_at=at),
            _ev(2, "supports", "agent_adjacent", source_event_id=event, sensor="git_outcome", observed_at=at),
            _ev(3, "supports", "model_internal", source_event_id=event, sensor="reasoning_summary", observed_at=at),
            _ev(4, "contradicts", "host_observed", source_event_id=event, sensor="git_working_tree", observed_at=at),
        ]
    if shape == 1:  # two host sensors on one event: distinct observations
        return [
            _ev(1, "supports", "host_observed", source_event_id=event, sensor="fs_metadata", observed_at=at),
            _ev(2, "supports", "host_observed", source_event_id=event, sensor="git_working_tree", observed_at=at),
        ]
    if shape == 2:  # only the model's own account
        return [_ev(1, "supports", "model_internal", source_event_id=event, sensor="self_report", observed_at=at)]
    if shape == 3:  # a judge derived from a tool summary derived from a probe
        return [
            _ev(1, "supports", "host_observed", sensor="probe", observed_at=at),
            _ev(2, "supports", "agent_adjacent", derived_from=["ev-1"], sensor="tool_summary", observed_at=at),
            _ev(3, "supports", "independent_external", derived_from=["ev-2"], sensor="judge", observed_at=at),
        ]
    if shape == 4:  # explicitly correlated probes, and one with no recorded source
        return [
            _ev(1, "supports", "agent_adjacent", correlation_group="probe-batch-7", sensor="probe_a", observed_at=at),
            _ev(2, "supports", "agent_adjacent", correlation_group="probe-batch-7", sensor="probe_b", observed_at=at),
            _ev(3, "contradicts", "agent_adjacent", sensor="unknown_sensor"),
        ]
    return []  # shape 5: no evidence at all


STRATEGIES = [["sensor_disagreement"], ["high_uncertainty"], ["verdict_changed_across_findings"],
              ["sensor_disagreement", "high_uncertainty"], ["high_uncertainty"], ["verdict_changed_across_findings"]]
VERDICTS = ["corroborated", "verified", "qualified", "verified", "contested", "unsupported"]
FIRST_LABEL = ["unreliable", "reliable", "insufficient_evidence", "reliable", "contradicted", "insufficient_evidence"]
SECOND_DIFFERS = {"unreliable": "contradicted", "reliable": "insufficient_evidence",
                  "insufficient_evidence": "unreliable", "contradicted": "unreliable"}

PLAN = {
    # slug: (cases, double-labelled, single-labelled, queued only, gold on first N)
    "acme-chat": (33, 24, 3, 3, 22),  # the last 3: new, not queued, for the tour's plan to enqueue
    "globex-verifier": (12, 4, 2, 4, 2),
}


def _payload(slug: str, n: int) -> dict:
    shape = n % 6
    subject, text = SUBJECTS[(n // 6 + shape) % len(SUBJECTS)]
    return {
        "case_id": f"{slug}-case-{n:03d}",
        "claim": {"subject": subject, "text": text},
        "local_verdict": VERDICTS[shape],
        "mined_by": STRATEGIES[shape],
        "sanitization_altered_outcome": n % 7 == 3,
        "context": "cohort-eu" if n % 2 else "",
        "replay_manifest": MANIFEST,
        "evidence": _evidence(shape, n),
    }


def _label(application: Application, case, user: AbstractBaseUser, label: str, why: str, at: datetime) -> CaseLabel:
    existing = CaseLabel.objects.filter(case=case, reviewer=user).first()
    if existing is not None:
        return existing
    return label_submit(application=application, case=case, reviewer=user, label=label, rationale=why, at=at)


def _labelled_at(now: datetime, n: int, total: int) -> datetime:
    """When case n got its first label: spread over the last 21 days, oldest case first."""
    return now - timedelta(days=21 * (total - n) / total, hours=n % 5)


def _enqueued_at(now: datetime, n: int, labelled: int) -> datetime:
    """When case n entered the adjudication queue: hours before its first label, or
    (not labelled yet) some time in the last week, so the queue's "waiting since"
    column reads like a queue that has been worked, not one loaded a moment ago."""
    if n < labelled:
        return _labelled_at(now, n, labelled) - timedelta(hours=2 + n % 7)
    return now - timedelta(hours=3 + (n * 13) % 160, minutes=(n * 17) % 60)


def load_demo(*, application: Application, users: dict[str, AbstractBaseUser]) -> None:
    plan = PLAN.get(application.slug)
    if plan is None:
        return
    total, double, single, queued, gold = plan
    first, second = users["curator"], users["curator2"]
    cases = []
    for n in range(total):
        data = CaseIn.model_validate(_payload(application.slug, n))
        cases.append(case_import(application=application, data=data, actor=None).case)

    now = timezone.now()
    labelled = double + single
    for n, case in enumerate(cases):
        if double <= n < labelled + queued and not case.queue_entries.exists():
            reason = "manual" if n % 2 else "second look: the sensors disagree"
            queue_enqueue(application=application, case=case, selection_reason=reason, actor=None,
                          at=_enqueued_at(now, n, labelled))

    for n, case in enumerate(cases[:labelled]):
        at = _labelled_at(now, n, labelled)
        base = FIRST_LABEL[n % 6]
        mine = _label(application, case, first, base, "Checked the host evidence against the agent's account.", at)
        if n < double:
            other = SECOND_DIFFERS[base] if n % 5 == 0 else base
            # curator2 is the slower of the two: hours later, sometimes the next day.
            theirs = _label(application, case, second, other, "Read the evidence table independently.",
                            at + timedelta(hours=3 + 7 * (n % 4)))
            if n < gold and not GoldLabelRevision.objects.filter(case=case).exists():
                promoted = at + timedelta(hours=4 + 7 * (n % 4))
                gold_promote(application=application, case=case, label=mine, adjudicator=first, at=promoted)
                if theirs.label != mine.label:
                    gold_promote(
                        application=application, case=case, label=theirs, adjudicator=first,
                        rationale="On a second look the host log decides it.", at=promoted + timedelta(days=2),
                    )

    token = ApiToken.objects.filter(application=application, kind="application").first()
    if token is not None:
        for case in cases[double : double + 2]:
            if not CaseFeedback.objects.filter(application=application, case_ref=case.case_id).exists():
                case_feedback_submit(
                    application=application, case_ref=case.case_id, manifest=case.replay_manifest,
                    disposition="disagrees", note="Runtime replay reached a different verdict.",
                    actor=Actor(token=token),
                )
