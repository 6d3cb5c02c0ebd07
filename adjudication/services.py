"""Writes of the adjudication app. Each service is keyword-only, runs in one
transaction, and appends an AdjudicationEvent in that same transaction."""

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, connection, transaction
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from consoles import webhooks
from consoles.errors import Conflict, InvalidInput, NotFound, PermissionDeniedError
from consoles.models import ApiToken, Application
from consoles.text import count, humanise
from consoles.timestamps import on_screen

from .evidence import HUMAN_REVIEWED
from .models import (
    AdjudicationEvent,
    Case,
    CaseLabel,
    EventKind,
    Evidence,
    GoldLabelRevision,
    QueueEntry,
    QueueSkip,
    QueueState,
)
from .schemas import CaseIn

MANUAL_REASON = "manual"
DEFAULT_LABELS_WANTED = 2  # double review: what agreement (kappa) is computed from

Actor = AbstractBaseUser | ApiToken | None


def claim_ttl() -> timedelta:
    return timedelta(minutes=getattr(settings, "ADJUDICATION_CLAIM_MINUTES", 30))


def _event(
    *, application: Application, kind: str, actor: Actor, case: Case | None = None, at: datetime | None = None,
    **detail: object,
) -> AdjudicationEvent:
    if isinstance(actor, ApiToken):
        fields = {"actor_kind": "token", "actor_token": actor}
    elif actor is None:
        fields = {"actor_kind": "system"}
    else:
        fields = {"actor_kind": "user", "actor_user": actor}
    return AdjudicationEvent.objects.create(
        application=application, case=case, kind=kind, detail=detail, created_at=at or timezone.now(), **fields
    )


# --- cases ------------------------------------------------------------------


def case_digest(data: CaseIn) -> str:
    canonical = json.dumps(data.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


@dataclass(frozen=True)
class CaseImported:
    case: Case
    created: bool  # False: the same case id with the same content was already there


def _refuse_human_claims_from_a_token(*, data: CaseIn, actor: Actor) -> None:
    # Human-reviewed evidence counts as the strongest support (band `verified`); only a
    # person can be its source. An integration that says so is refused, not downgraded:
    # silently storing it as something else would hide the client's mistake.
    if not isinstance(actor, ApiToken):
        return
    for i, item in enumerate(data.evidence):
        if item.trust_class == HUMAN_REVIEWED:
            raise InvalidInput(
                "An application token cannot submit human-reviewed evidence; only a person can review.",
                code="human_only",
                fields={f"evidence.{i}.trust_class": "human_reviewed needs a person (session or personal token)"},
            )


def _case_write(*, application: Application, data: CaseIn, actor: Actor) -> CaseImported:
    _refuse_human_claims_from_a_token(data=data, actor=actor)
    digest = case_digest(data)
    existing = Case.objects.filter(application=application, case_id=data.case_id).first()
    if existing is not None:
        if existing.digest == digest:
            return CaseImported(case=existing, created=False)
        raise Conflict(
            f"Case {data.case_id!r} already exists with different content; cases are never overwritten.",
            code="case_exists",
            fields={"case_id": "already exists with different content"},
            current={"id": existing.pk, "case_id": existing.case_id, "digest": existing.digest},
        )
    manifest = data.replay_manifest.model_dump(mode="json")
    case = Case.objects.create(
        application=application,
        case_id=data.case_id,
        claim_subject=data.claim.subject,
        claim_text=data.claim.text,
        local_verdict=data.local_verdict,
        mined_by=list(data.mined_by),
        sanitization_altered_outcome=data.sanitization_altered_outcome,
        context=data.context or "",
        replay_manifest=manifest,
        digest=digest,
    )
    Evidence.objects.bulk_create(
        [
            Evidence(
                case=case,
                position=i,
                evidence_id=item.evidence_id,
                relation=item.relation,
                trust_class=item.trust_class,
                source_event_id=item.source_event_id or "",
                correlation_group=item.correlation_group or "",
                derived_from=list(item.derived_from),
                sensor=item.sensor,
                observed_at=item.observed_at,
            )
            for i, item in enumerate(data.evidence)
        ]
    )
    _event(
        application=application,
        kind=EventKind.CASE_IMPORTED,
        actor=actor,
        case=case,
        case_id=case.case_id,
        evidence=len(data.evidence),
    )
    return CaseImported(case=case, created=True)


def case_import(*, application: Application, data: CaseIn, actor: Actor) -> CaseImported:
    """Import one validated case; idempotent on (application, case id)."""
    try:
        with transaction.atomic():
            return _case_write(application=application, data=data, actor=actor)
    except IntegrityError as exc:
        # Two importers raced on the same case id: whoever lost sees the winner's row.
        existing = Case.objects.filter(application=application, case_id=data.case_id).first()
        if existing is not None and existing.digest == case_digest(data):
            return CaseImported(case=existing, created=False)
        raise Conflict(f"Case {data.case_id!r} was written concurrently.", code="case_exists") from exc


def case_import_batch(*, application: Application, cases: list[CaseIn], actor: Actor) -> list[CaseImported]:
    """All or nothing: one refused case refuses the batch (its index is named)."""
    results: list[CaseImported] = []
    try:
        with transaction.atomic():
            for index, data in enumerate(cases):
                try:
                    results.append(_case_write(application=application, data=data, actor=actor))
                except Conflict as exc:
                    exc.fields = {f"cases.{index}.case_id": exc.fields.get("case_id", exc.message)}
                    raise
                except InvalidInput as exc:
                    exc.fields = {f"cases.{index}.{name}": why for name, why in exc.fields.items()}
                    raise
    except IntegrityError as exc:
        raise Conflict("A case of this batch was written concurrently; retry.", code="case_exists") from exc
    return results


# --- queue ------------------------------------------------------------------


def queue_enqueue(
    *,
    application: Application,
    case: Case,
    selection_reason: str,
    actor: AbstractBaseUser | None,
    labels_wanted: int = DEFAULT_LABELS_WANTED,
    at: datetime | None = None,
) -> QueueEntry | None:
    """Put a case in the adjudication queue. Returns None and writes nothing when
    the case already has an open entry (a plan re-run never duplicates work);
    refuses (`labels_complete`) a case that already has the labels wanted.
    `at`: when (now unless given; the demo data's history is in the past)."""
    if case.application_id != application.pk:
        raise NotFound("No such case.")
    reason = (selection_reason or "").strip()
    if not reason:
        raise InvalidInput("Say why this case is selected.", fields={"selection_reason": "required"})
    if labels_wanted < 1:
        raise InvalidInput("At least one label is wanted.", fields={"labels_wanted": "must be >= 1"})
    if QueueEntry.objects.filter(case=case, state=QueueState.OPEN).exists():
        return None
    labelled = CaseLabel.objects.filter(case=case).count()
    if labelled >= labels_wanted:
        # An entry would show "2 / 2" and wait for a curator who has not labelled it yet.
        raise InvalidInput(
            f"Not added to the queue: this case already has {count(labelled, 'label')}, as many as the queue "
            "asks for. Adjudicate it from its labels instead.",
            code="labels_complete",
        )
    try:
        with transaction.atomic():
            entry = QueueEntry.objects.create(
                application=application,
                case=case,
                selection_reason=reason,
                labels_wanted=labels_wanted,
                created_by=actor,
                created_at=at or timezone.now(),
            )
            _event(
                application=application,
                kind=EventKind.ENQUEUED,
                actor=actor,
                case=case,
                at=entry.created_at,
                entry=entry.pk,
                selection_reason=reason,
            )
    except IntegrityError:
        # The partial unique index caught a concurrent enqueue of the same case.
        return None
    return entry


def _claimable(*, application: Application, user: AbstractBaseUser, now: datetime) -> QuerySet[QueueEntry]:
    already_labelled = CaseLabel.objects.filter(case=OuterRef("case"), reviewer=user)
    skipped = QueueSkip.objects.filter(entry=OuterRef("pk"), user=user)
    return (
        QueueEntry.objects.filter(application=application, state=QueueState.OPEN)
        .filter(Q(claimed_by__isnull=True) | Q(claim_expires_at__lte=now))
        .exclude(Exists(already_labelled))
        .exclude(Exists(skipped))
        .order_by("created_at", "id")
    )


def queue_claim_current(*, application: Application, user: AbstractBaseUser) -> QueueEntry | None:
    return (
        QueueEntry.objects.select_related("case")
        .filter(
            application=application,
            state=QueueState.OPEN,
            claimed_by=user,
            claim_expires_at__gt=timezone.now(),
        )
        .order_by("claimed_at")
        .first()
    )


def queue_claim_next(*, application: Application, user: AbstractBaseUser) -> QueueEntry | None:
    """Give `user` an entry nobody else holds; None when nothing is left for them.

    A curator holds one claim at a time: asking again returns the same entry.
    PostgreSQL: SELECT ... FOR UPDATE SKIP LOCKED, so concurrent curators each
    lock a different row without waiting. SQLite (writers are serialised by the
    IMMEDIATE transaction): a conditional UPDATE that only succeeds while the
    entry is still unclaimed or expired, checked by its row count.
    """
    current = queue_claim_current(application=application, user=user)
    if current is not None:
        return current
    now = timezone.now()
    claim = {"claimed_by": user, "claimed_at": now, "claim_expires_at": now + claim_ttl()}
    with transaction.atomic():
        entry: QueueEntry | None = None
        if connection.features.has_select_for_update_skip_locked:
            entry = (
                _claimable(application=application, user=user, now=now)
                .select_for_update(skip_locked=True, of=("self",))
                .first()
            )
            if entry is not None:
                QueueEntry.objects.filter(pk=entry.pk).update(**claim)
        else:
            for candidate in _claimable(application=application, user=user, now=now).values_list(
                "pk", flat=True
            )[:20]:
                won = (
                    QueueEntry.objects.filter(pk=candidate, state=QueueState.OPEN)
                    .filter(Q(claimed_by__isnull=True) | Q(claim_expires_at__lte=now))
                    .update(**claim)
                )
                if won == 1:
                    entry = QueueEntry.objects.get(pk=candidate)
                    break
        if entry is None:
            return None
        entry.refresh_from_db()
        _event(
            application=application, kind=EventKind.CLAIMED, actor=user, case=entry.case, entry=entry.pk
        )
    return QueueEntry.objects.select_related("case").get(pk=entry.pk)


def _require_claimant(entry: QueueEntry, user: AbstractBaseUser) -> None:
    if entry.state != QueueState.OPEN or entry.claimed_by_id != user.pk:
        raise Conflict(
            "You do not hold this entry (it was released, expired and taken, or finished).",
            code="not_claimant",
            current={"state": entry.state, "claimed": entry.claimed_by_id is not None},
        )


def queue_release(*, application: Application, entry: QueueEntry, user: AbstractBaseUser) -> QueueEntry:
    if entry.application_id != application.pk:
        raise NotFound("No such queue entry.")
    with transaction.atomic():
        entry = QueueEntry.objects.select_for_update().get(pk=entry.pk)
        _require_claimant(entry, user)
        QueueEntry.objects.filter(pk=entry.pk).update(claimed_by=None, claimed_at=None, claim_expires_at=None)
        _event(application=application, kind=EventKind.RELEASED, actor=user, case=entry.case, entry=entry.pk)
    entry.refresh_from_db()
    return entry


def queue_skip(*, application: Application, entry: QueueEntry, user: AbstractBaseUser) -> QueueEntry:
    """Release the entry and stop offering it to this curator (others still get it)."""
    if entry.application_id != application.pk:
        raise NotFound("No such queue entry.")
    with transaction.atomic():
        entry = QueueEntry.objects.select_for_update().get(pk=entry.pk)
        _require_claimant(entry, user)
        QueueEntry.objects.filter(pk=entry.pk).update(claimed_by=None, claimed_at=None, claim_expires_at=None)
        QueueSkip.objects.get_or_create(entry=entry, user=user)
        _event(application=application, kind=EventKind.SKIPPED, actor=user, case=entry.case, entry=entry.pk)
    entry.refresh_from_db()
    return entry


# --- labels and gold ----------------------------------------------------------


def label_submit(
    *,
    application: Application,
    case: Case,
    reviewer: AbstractBaseUser,
    label: str,
    rationale: str,
    at: datetime | None = None,
) -> CaseLabel:
    """Record one curator's independent label. If the case has an open queue entry
    it counts towards it (and the curator's claim on it ends). `at`: when (now
    unless given; the demo data's history is in the past)."""
    at = at or timezone.now()
    if case.application_id != application.pk:
        raise NotFound("No such case.")
    if not getattr(reviewer, "is_authenticated", False):
        raise PermissionDeniedError("Only a person can label a case.", code="human_required")
    if label not in application.case_labels:
        raise InvalidInput(
            f"Unknown label {label!r}.",
            fields={"label": f"choose one of: {', '.join(application.case_labels)}"},
        )
    rationale = (rationale or "").strip()
    if not rationale:
        raise InvalidInput("Say why (a rationale is required).", fields={"rationale": "required"})
    try:
        with transaction.atomic():
            entry = (
                QueueEntry.objects.select_for_update()
                .filter(case=case, state=QueueState.OPEN)
                .first()
            )
            created = CaseLabel.objects.create(
                application=application,
                case=case,
                reviewer=reviewer,
                label=label,
                rationale=rationale,
                queue_entry=entry,
                created_at=at,
            )
            if entry is not None:
                update: dict[str, object] = {}
                if entry.claimed_by_id == reviewer.pk:
                    update.update(claimed_by=None, claimed_at=None, claim_expires_at=None)
                if CaseLabel.objects.filter(case=case).count() >= entry.labels_wanted:
                    update.update(
                        state=QueueState.DONE,
                        closed_at=at,
                        claimed_by=None,
                        claimed_at=None,
                        claim_expires_at=None,
                    )
                if update:
                    QueueEntry.objects.filter(pk=entry.pk).update(**update)
            _event(
                application=application,
                kind=EventKind.LABELLED,
                actor=reviewer,
                case=case,
                at=at,
                label=label,
                entry=entry.pk if entry else None,
            )
    except IntegrityError as exc:
        given = CaseLabel.objects.filter(case=case, reviewer=reviewer).first()
        what = f" ({humanise(given.label)}, {on_screen(given.created_at)})" if given else ""
        message = (
            f"You already labelled this case{what}; each curator labels a case once, "
            "so this second label was not saved."
        )
        raise Conflict(message, code="already_labelled", fields={"label": message}) from exc
    return created


def gold_promote(
    *,
    application: Application,
    case: Case,
    label: CaseLabel,
    adjudicator: AbstractBaseUser,
    rationale: str = "",
    at: datetime | None = None,
) -> GoldLabelRevision:
    """Append a gold-label revision that supersedes the case's current gold label.

    A human adjudicates: the adjudicator is a user (the column cannot hold a token)
    who has labelled the case themselves, so they decided with all labels in view.
    When the application requires two agreeing curators, a second curator's label
    with the same value must exist. `at`: when (now unless given; the demo data's
    history is in the past).
    """
    if case.application_id != application.pk or label.case_id != case.pk:
        raise NotFound("No such label on this case.")
    if not getattr(adjudicator, "is_authenticated", False):
        raise PermissionDeniedError("Only a person can promote a gold label.", code="human_required")
    if not CaseLabel.objects.filter(case=case, reviewer=adjudicator).exists():
        raise PermissionDeniedError(
            "Label the case yourself before adjudicating it.", code="label_first"
        )
    agreeing = (
        CaseLabel.objects.filter(case=case, label=label.label)
        .exclude(reviewer_id=label.reviewer_id)
        .order_by("created_at", "id")
        .first()
    )
    if application.gold_requires_two_agreeing and agreeing is None:
        raise InvalidInput(
            "This application needs two curators agreeing on a label before it becomes gold.",
            code="needs_two_agreeing",
            fields={"label": "no second curator gave this label"},
        )
    try:
        with transaction.atomic():
            # Lock the case row: two adjudicators promoting at once get consecutive
            # revisions, never the same number (the unique constraint backs this up).
            Case.objects.select_for_update().filter(pk=case.pk).first()
            current = GoldLabelRevision.objects.filter(case=case).order_by("-revision").first()
            # Promoting another curator's label with the gold label's value would
            # write a revision that changes nothing a consumer reads.
            if current is not None and (current.based_on_id == label.pk or current.label == label.label):
                raise Conflict(
                    f"“{humanise(label.label)}” is already the current gold label (revision "
                    f"{current.revision}, promoted by {current.promoted_by.get_username()} "
                    f"on {on_screen(current.created_at)}); nothing was changed.",
                    code="already_gold",
                    current={"revision": current.revision, "label": current.label},
                )
            revision = GoldLabelRevision.objects.create(
                application=application,
                case=case,
                revision=(current.revision + 1) if current else 1,
                label=label.label,
                rationale=(rationale or "").strip(),
                promoted_by=adjudicator,
                based_on=label,
                agreeing_label=agreeing,
                created_at=at or timezone.now(),
            )
            _event(
                application=application,
                kind=EventKind.GOLD_PROMOTED,
                actor=adjudicator,
                at=revision.created_at,
                case=case,
                revision=revision.revision,
                label=label.label,
                supersedes=current.revision if current else None,
            )
            webhooks.event_record(application=application, type="case.gold_promoted", data={"case_id": case.case_id, "revision": revision.revision, "label": label.label, "promoted_by": adjudicator.get_username()})  # noqa: E501
    except IntegrityError as exc:
        raise Conflict("Another adjudicator promoted a label at the same time; reload.", code="conflict") from exc
    return revision
