"""Reads of the sampling app. Every function takes the application explicitly."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from datetime import date, datetime

from django.db import connection, transaction
from django.db.models import Count, OuterRef, QuerySet, Subquery, TextField
from django.db.models.functions import Cast

from adjudication.labels import label_disagrees_with_verdict
from adjudication.models import Case, CaseLabel, Evidence, GoldLabelRevision
from adjudication.selectors import gold_labels_current
from consoles.dbfunctions import day_bounds
from consoles.errors import InvalidInput, NotFound
from consoles.models import Application
from feedback.selectors import case_refs_with_disagreement

from .comparison import (
    DEFAULT_DRAWS,
    MAX_DRAWS,
    MAX_SEED,
    MIN_GOLD_LABELS,
    Comparison,
    LabelledCase,
    compare,
)
from .gapcache import NO_EVIDENCE, decode_id_list, gaps_by_case
from .models import EnqueueOutcome, PlanPattern, PlanSelection, SamplingPlan
from .policy import DEFAULT_MAX_PER_PATTERN, CaseInput, normalize_strategies


@dataclass(frozen=True)
class Corpus:
    """What the policy reads for one application, split by gold label."""

    # case_id -> (case pk, policy input), for cases without a gold label.
    unlabelled: dict[str, tuple[int, CaseInput]]
    # Cases with a current gold label, and whether it disagrees with the verdict.
    labelled: list[LabelledCase]


def sampling_corpus(*, application: Application) -> Corpus:
    """See `_read_corpus`. On PostgreSQL the reads run inside a transaction: a
    server-side cursor outside one is WITH HOLD, which makes the server copy the
    whole result before the first row arrives; inside one, rows stream. (On
    SQLite a transaction would take the write lock for the whole read.)"""
    guard = transaction.atomic() if connection.vendor == "postgresql" else contextlib.nullcontext()
    with guard:
        return _read_corpus(application)


def _read_corpus(application: Application) -> Corpus:
    """Every case of the application turned into policy inputs, in a fixed number
    of queries (cases, evidence, gold labels, feedback), never one per case.

    Reads plain rows rather than model instances, and the JSON lists as text
    decoded once per distinct value: at 100,000 cases with a quarter of a
    million evidence rows, instantiating models alone would take seconds.
    """
    gaps = gaps_by_case(
        Evidence.objects.filter(case__application=application)
        .order_by("case_id", "position")
        .values_list(
            "case_id", "evidence_id", "relation", "trust_class", "source_event_id",
            "correlation_group", Cast("derived_from", TextField()),
        )
        .iterator(chunk_size=10_000)
    )
    gold = gold_labels_current(application=application)
    disagreed = case_refs_with_disagreement(application=application)
    unlabelled: dict[str, tuple[int, CaseInput]] = {}
    labelled: list[LabelledCase] = []
    decoded: dict[str, tuple[str, ...]] = {}
    strategies: dict[tuple[str, ...], tuple[str, ...]] = {}
    rows = Case.objects.filter(application=application).values_list(
        "pk", "case_id", "claim_subject", "local_verdict", Cast("mined_by", TextField()),
        "sanitization_altered_outcome",
    ).order_by("case_id")  # the unique (application, case_id) index; the policy sorts by case id
    for pk, case_id, subject, verdict, mined_by, sanitized in rows.iterator(chunk_size=10_000):
        raw = decode_id_list(mined_by, decoded)
        normalized = strategies.get(raw)
        if normalized is None:
            normalized = strategies[raw] = normalize_strategies(raw)
        # Built directly: every field is already normalised (CaseInput.build's job).
        case_input = CaseInput(
            case_id=case_id,
            claim_subject=subject,
            local_verdict=verdict,
            mined_by=normalized,
            gaps=gaps.get(pk, NO_EVIDENCE),
            sanitization_altered_outcome=bool(sanitized),
            feedback_disagrees=case_id in disagreed,
        )
        label = gold.get(pk)
        if label is None:
            unlabelled[case_id] = (pk, case_input)
        else:
            labelled.append(
                LabelledCase(case=case_input, disagrees=label_disagrees_with_verdict(label, verdict))
            )
    return Corpus(unlabelled=unlabelled, labelled=labelled)


def gold_labelled_count(*, application: Application) -> int:
    """Cases with at least one gold revision: the comparison's gate, without loading the corpus."""
    return (
        GoldLabelRevision.objects.filter(application=application)
        .values("case_id")
        .distinct()
        .count()
    )


def sampling_comparison(
    *,
    application: Application,
    budget: int,
    seed: int,
    draws: int = DEFAULT_DRAWS,
    max_per_pattern: int = DEFAULT_MAX_PER_PATTERN,
) -> Comparison:
    """The policy against random draws over the application's gold-labelled cases."""
    fields = {}
    if budget < 1:
        fields["budget"] = "must be at least 1"
    if not 1 <= draws <= MAX_DRAWS:
        fields["draws"] = f"must be from 1 to {MAX_DRAWS}"
    if max_per_pattern < 1:
        fields["max_per_pattern"] = "must be at least 1"
    if not 0 <= seed <= MAX_SEED:
        fields["seed"] = f"must be from 0 to {MAX_SEED}"  # as the screen's form says
    if fields:
        raise InvalidInput("The comparison's parameters are not valid.", fields=fields)
    count = gold_labelled_count(application=application)
    if count < MIN_GOLD_LABELS:
        # The gate: say so and compute nothing (not even the corpus load).
        return Comparison(
            labelled_count=count, budget=budget, seed=seed, draws=draws,
            max_per_pattern=max_per_pattern, enough=False,
        )
    corpus = sampling_corpus(application=application)
    try:
        return compare(
            corpus.labelled, budget=budget, seed=seed, draws=draws, max_per_pattern=max_per_pattern
        )
    except ValueError as exc:
        # The one refusal left after the checks above: K must leave room for chance.
        raise InvalidInput(str(exc), code="budget_too_large", fields={"budget": str(exc)}) from exc


def plan_list(*, application: Application) -> QuerySet[SamplingPlan]:
    return (
        SamplingPlan.objects.filter(application=application)
        .select_related("created_by", "enqueued_by")
        .defer("canonical_json")
        .order_by("-created_at", "-id")
    )


def plan_get(*, application: Application, pk: int) -> SamplingPlan:
    plan = (
        SamplingPlan.objects.filter(application=application, pk=pk)
        .select_related("created_by", "enqueued_by")
        .first()
    )
    if plan is None:
        raise NotFound("No such sampling plan.")
    return plan


def plan_selections(*, plan: SamplingPlan) -> QuerySet[PlanSelection]:
    return PlanSelection.objects.filter(plan=plan).order_by("rank")


def plan_patterns_capped(*, plan: SamplingPlan) -> QuerySet[PlanPattern]:
    """The patterns where the cap left cases out, the largest effect first."""
    return PlanPattern.objects.filter(plan=plan, capped_count__gt=0).order_by(
        "-capped_count", "pattern_key"
    )


def plans_waiting_count(*, application: Application) -> int:
    return SamplingPlan.objects.filter(application=application, enqueued_at__isnull=True).count()


# --- Overview aggregates ---------------------------------------------------------


@dataclass(frozen=True)
class PlanOutcome:
    """What became of one plan's selections: queued, labelled by a human, and how
    many of those the humans changed (their answer disagrees with the local verdict)."""

    plan_id: int
    plan_digest: str
    created_at: datetime
    enqueued: bool
    selected: int
    queued: int
    labelled: int
    changed: int

    @property
    def label(self) -> str:
        return f"{self.created_at:%b %d} · {self.plan_digest[:8]}"


def plan_outcomes(*, application: Application, first: date, last: date, limit: int = 12) -> list[PlanOutcome]:
    """The newest `limit` plans made on UTC days first..last, oldest first, with their outcomes.

    One query for the plans and one for their selections, each selection
    annotated (in the database) with its case's verdict, label count, current
    gold label and newest label. The human answer is the gold label when there is
    one, else the newest curator label; "changed" uses the same comparison as the
    sampling comparison (`label_disagrees_with_verdict`).
    """
    start, end = day_bounds(first, last)
    plans = list(
        SamplingPlan.objects.filter(application=application, created_at__gte=start, created_at__lt=end)
        .order_by("-created_at", "-id")
        .values_list("pk", "plan_digest", "created_at", "enqueued_at", "selected_count")[:limit]
    )
    plans.reverse()
    gold = Subquery(
        GoldLabelRevision.objects.filter(case=OuterRef("case")).order_by("-revision").values("label")[:1]
    )
    newest = Subquery(CaseLabel.objects.filter(case=OuterRef("case")).order_by("-created_at", "-id").values("label")[:1])
    rows = (
        PlanSelection.objects.filter(plan_id__in=[p[0] for p in plans])
        .annotate(gold=gold, newest=newest, labels=Count("case__labels"))
        .values_list("plan_id", "case__local_verdict", "enqueue_outcome", "labels", "gold", "newest")
        .order_by()
    )
    tallies: dict[int, list[int]] = {p[0]: [0, 0, 0] for p in plans}  # queued, labelled, changed
    for plan_id, verdict, outcome, labels, gold_label, newest_label in rows:
        tally = tallies[plan_id]
        tally[0] += outcome == EnqueueOutcome.QUEUED
        if labels:
            tally[1] += 1
            answer = gold_label or newest_label
            tally[2] += bool(verdict) and label_disagrees_with_verdict(answer, verdict)
    return [
        PlanOutcome(
            plan_id=pk, plan_digest=digest, created_at=created, enqueued=enqueued_at is not None,
            selected=selected, queued=tallies[pk][0], labelled=tallies[pk][1], changed=tallies[pk][2],
        )
        for pk, digest, created, enqueued_at, selected in plans
    ]
