"""Reads of the adjudication app; every one takes the application explicitly."""

from dataclasses import dataclass
from datetime import UTC, date, timedelta

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Count, Exists, F, IntegerField, OuterRef, Q, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from consoles.dbfunctions import UtcDay, as_date, day_bounds, day_start
from consoles.errors import InvalidInput, NotFound
from consoles.lookups import HasString, ILike
from consoles.models import Application
from consoles.pagination import Keyset

from .agreement import MIN_KAPPA_CASES, Agreement, LabelEvent, agreement, cohen_kappa
from .evidence import EvidenceRecord
from .models import Case, CaseLabel, Evidence, GoldLabelRevision, QueueEntry, QueueState


def _record(row: Evidence) -> EvidenceRecord:
    return EvidenceRecord(
        evidence_id=row.evidence_id,
        relation=row.relation,
        trust_class=row.trust_class,
        source_event_id=row.source_event_id or None,
        correlation_group=row.correlation_group or None,
        derived_from=tuple(row.derived_from or ()),
        sensor=row.sensor,
        observed_at=row.observed_at,
    )


def _current_gold() -> Subquery:
    return Subquery(
        GoldLabelRevision.objects.filter(case=OuterRef("pk")).order_by("-revision").values("label")[:1]
    )


# The case list pages by keyset (consoles.pagination), on its (application, -created_at, -id) index.
CASES = Keyset(("created_at", "id"), descending=True, scope="cases")


def case_list(
    *,
    application: Application,
    q: str = "",
    status: str = "",
    strategy: str = "",
) -> QuerySet[Case]:
    """Cases of the application, newest first, with label count, current gold
    label and whether an open queue entry exists (one query, no N+1)."""
    label_count = Subquery(
        CaseLabel.objects.filter(case=OuterRef("pk"))
        .order_by()
        .values("case")
        .annotate(n=Count("id"))
        .values("n")[:1],
        output_field=IntegerField(),
    )
    qs = Case.objects.filter(application=application).annotate(
        label_count=Coalesce(label_count, Value(0)),
        gold_label=_current_gold(),
        queued=Exists(QueueEntry.objects.filter(case=OuterRef("pk"), state=QueueState.OPEN)),
    )
    # Both filters are written so PostgreSQL estimates them from the columns'
    # statistics (consoles.lookups): a common match then walks the created index
    # for one page instead of scanning and sorting every case.
    if q:
        qs = qs.filter(ILike(F("case_id"), q) | ILike(F("claim_subject"), q) | ILike(F("claim_text"), q))
    if strategy:
        qs = qs.filter(HasString(F("mined_by"), strategy))
    # Each status is a semi-join against a set of case keys the database builds
    # once per query, not the per-row subqueries above: a page walks the newest
    # cases until it has enough, and a status few cases have (gold early on)
    # must not run three subqueries for every case it passes.
    labelled = CaseLabel.objects.filter(application=application).order_by().values("case_id")
    counted = labelled.annotate(n=Count("id")).values("case_id")
    if status == "unlabelled":
        qs = qs.exclude(pk__in=labelled)
    elif status == "one_label":
        qs = qs.filter(pk__in=counted.filter(n=1))
    elif status == "double":
        qs = qs.filter(pk__in=counted.filter(n__gte=2))
    elif status == "gold":
        qs = qs.filter(pk__in=GoldLabelRevision.objects.filter(application=application).values("case_id"))
    elif status == "queued":
        qs = qs.filter(pk__in=QueueEntry.objects.filter(application=application, state=QueueState.OPEN)
                       .values("case_id"))
    return qs.order_by("-created_at", "-id")


def case_get(*, application: Application, pk: int) -> Case:
    case = Case.objects.filter(application=application, pk=pk).first()
    if case is None:
        raise NotFound("No such case.")
    return case


def case_get_visible(*, applications: QuerySet[Application], ref: str) -> Case:
    """A case named by its case id (or, when no case has that id, its number) among
    `applications`, those an API caller may see: another tenant's case and a missing
    one are the same "no row", the same 404. A case id two of them hold is bad input."""
    cases = Case.objects.select_related("application").filter(application__in=applications)
    found = list(cases.filter(case_id=ref)[:2])
    if len(found) > 1:
        raise InvalidInput("Two of your applications have a case with this id: name the application.",
                           fields={"application_id": "required: the case id is not unique across your applications"})
    if not found and ref.isascii() and ref.isdigit() and len(ref) < 19:
        found = list(cases.filter(pk=int(ref))[:1])
    if not found:
        raise NotFound("No such case.")
    return found[0]


def case_get_by_ref(*, application: Application, ref: str) -> Case:
    """A case by its case id, or by its number when no case has that id (the
    case id wins: a pipeline may well number its cases)."""
    case = Case.objects.filter(application=application, case_id=ref).first()
    if case is None and ref.isascii() and ref.isdigit() and len(ref) < 19:
        case = Case.objects.filter(application=application, pk=int(ref)).first()
    if case is None:
        raise NotFound("No such case.")
    return case


def case_get_by_case_id(*, application: Application, case_id: str) -> Case:
    case = Case.objects.filter(application=application, case_id=case_id).first()
    if case is None:
        raise NotFound("No such case.")
    return case


def case_evidence(*, case: Case) -> list[Evidence]:
    return list(Evidence.objects.filter(case=case).order_by("position"))


def evidence_records(rows: list[Evidence]) -> list[EvidenceRecord]:
    return [_record(row) for row in rows]


def case_evidence_records(*, application: Application) -> dict[int, list[EvidenceRecord]]:
    """Every case's evidence as EvidenceRecords, in one query for the application.
    Cases without evidence map to an empty list (their gap is no_evidence_at_all)."""
    result: dict[int, list[EvidenceRecord]] = {
        pk: [] for pk in Case.objects.filter(application=application).values_list("pk", flat=True)
    }
    # Tuples, not model instances: this runs over every case of an application.
    rows = (
        Evidence.objects.filter(case__application=application)
        .order_by("case_id", "position")
        .values_list(
            "case_id", "evidence_id", "relation", "trust_class", "source_event_id",
            "correlation_group", "derived_from", "sensor", "observed_at",
        )
    )
    for case_pk, evidence_id, relation, trust, event, group, derived, sensor, observed in rows.iterator(
        chunk_size=5000
    ):
        result.setdefault(case_pk, []).append(
            EvidenceRecord(
                evidence_id=evidence_id,
                relation=relation,
                trust_class=trust,
                source_event_id=event or None,
                correlation_group=group or None,
                derived_from=tuple(derived or ()),
                sensor=sensor,
                observed_at=observed,
            )
        )
    return result


def gold_labels_current(*, application: Application) -> dict[int, str]:
    """case pk -> current gold label (its newest revision), for cases that have one."""
    newer = GoldLabelRevision.objects.filter(case=OuterRef("case"), revision__gt=OuterRef("revision"))
    rows = (
        GoldLabelRevision.objects.filter(application=application)
        .exclude(Exists(newer))
        .values_list("case_id", "label")
    )
    return dict(rows)


def gold_history(*, case: Case) -> QuerySet[GoldLabelRevision]:
    return (
        GoldLabelRevision.objects.filter(case=case)
        .select_related("promoted_by", "based_on__reviewer")
        .order_by("-revision")
    )


@dataclass(frozen=True)
class LabelsView:
    """What a user may see of a case's labels. Until they have labelled the case
    themselves (or it has a gold label), other curators' labels stay hidden, so
    double review is independent."""

    own: CaseLabel | None
    others: list[CaseLabel]
    hidden_count: int  # labels by others that exist but are not shown

    @property
    def total(self) -> int:
        return (self.own is not None) + len(self.others) + self.hidden_count

    @property
    def revealed(self) -> bool:
        return self.hidden_count == 0


def case_labels_for(*, case: Case, user: AbstractBaseUser) -> LabelsView:
    labels = list(CaseLabel.objects.filter(case=case).select_related("reviewer").order_by("created_at", "id"))
    own = next((lab for lab in labels if lab.reviewer_id == user.pk), None)
    others = [lab for lab in labels if lab.reviewer_id != user.pk]
    if own is not None or GoldLabelRevision.objects.filter(case=case).exists():
        return LabelsView(own=own, others=others, hidden_count=0)
    return LabelsView(own=None, others=[], hidden_count=len(others))


def queue_open_list(*, application: Application) -> QuerySet[QueueEntry]:
    return (
        QueueEntry.objects.filter(application=application, state=QueueState.OPEN)
        .select_related("case", "claimed_by")
        .annotate(label_count=Count("case__labels", distinct=True))
        .order_by("created_at", "id")
    )


def queue_entry_get(*, application: Application, pk: int) -> QueueEntry:
    entry = QueueEntry.objects.filter(application=application, pk=pk).select_related("case").first()
    if entry is None:
        raise NotFound("No such queue entry.")
    return entry


def queue_open_for_case(*, case: Case) -> QueueEntry | None:
    return QueueEntry.objects.filter(case=case, state=QueueState.OPEN).select_related("claimed_by").first()


def queue_open_count(*, application: Application) -> int:
    return QueueEntry.objects.filter(application=application, state=QueueState.OPEN).count()


def queue_unclaimed_count(*, application: Application) -> int:
    now = timezone.now()
    return (
        QueueEntry.objects.filter(application=application, state=QueueState.OPEN)
        .filter(Q(claimed_by__isnull=True) | Q(claim_expires_at__lte=now))
        .count()
    )


def cases_needing_second_label_count(*, application: Application) -> int:
    return (
        CaseLabel.objects.filter(application=application)
        .values("case")
        .annotate(n=Count("id"))
        .filter(n=1)
        .count()
    )


def label_events(*, application: Application) -> list[LabelEvent]:
    """Every label of the application, for agreement (one query)."""
    rows = (
        CaseLabel.objects.filter(application=application)
        .order_by("created_at", "id")
        .values_list("case_id", "reviewer__username", "label", "created_at", "id")
    )
    return [LabelEvent(case=c, reviewer=u, label=lab, order=(t, i)) for c, u, lab, t, i in rows]


def application_agreement(*, application: Application) -> Agreement:
    return agreement(label_events(application=application), labels=application.case_labels)


# --- Overview aggregates ---------------------------------------------------------


def gold_promotions_by_day(*, application: Application, first: date, last: date) -> list[tuple[date, int, int]]:
    """(day, first gold labels, revisions of an existing gold label) promoted on UTC days first..last."""
    start, end = day_bounds(first, last)
    rows = (
        GoldLabelRevision.objects.filter(application=application, created_at__gte=start, created_at__lt=end)
        .annotate(day=UtcDay("created_at"))
        .values("day")
        .annotate(first=Count("id", filter=Q(revision=1)), revised=Count("id", filter=Q(revision__gt=1)))
        .order_by("day")
    )
    return [(as_date(r["day"]), r["first"], r["revised"]) for r in rows]


@dataclass(frozen=True)
class AgreementPoint:
    day: date
    n: int  # double-labelled cases by the end of the day
    kappa: float | None  # None below the gate (or undefined)

    @property
    def enough(self) -> bool:
        return self.n >= MIN_KAPPA_CASES


def agreement_by_day(*, application: Application, days: list[date]) -> list[AgreementPoint]:
    """Cohen's kappa as it stood at the end of each of `days` (ascending), with the
    same pairs as the agreement page: each case's first two curators, in order.

    One query over the labels up to the last day (a few per case: they grow with
    human work, not with traffic); the pairs are accumulated once, in order.
    """
    if not days:
        return []
    rows = (
        CaseLabel.objects.filter(application=application, created_at__lt=day_start(days[-1] + timedelta(days=1)))
        .order_by("created_at", "id")
        .values_list("case_id", "reviewer_id", "label", "created_at")
    )
    first: dict[int, tuple[int, str]] = {}
    completed: list[tuple[date, tuple[str, str]]] = []  # (day the second label came, pair)
    paired: set[int] = set()
    for case_id, reviewer_id, label, created_at in rows.iterator(chunk_size=5000):
        if case_id in paired:
            continue
        if case_id not in first:
            first[case_id] = (reviewer_id, label)
        elif first[case_id][0] != reviewer_id:
            paired.add(case_id)
            completed.append((created_at.astimezone(UTC).date(), (first[case_id][1], label)))
    points: list[AgreementPoint] = []
    taken = 0
    for day in days:
        while taken < len(completed) and completed[taken][0] <= day:
            taken += 1
        pairs = [pair for _, pair in completed[:taken]]
        kappa = cohen_kappa(pairs).kappa if taken >= MIN_KAPPA_CASES else None
        points.append(AgreementPoint(day=day, n=taken, kappa=kappa))
    return points
