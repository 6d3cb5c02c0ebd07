"""The overview's charts: each reads one selector of the owning app (which
aggregates in the database) and turns its per-day rows into a `Chart`."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date

from adjudication.agreement import MIN_KAPPA_CASES
from adjudication.selectors import agreement_by_day, gold_promotions_by_day
from consoles.models import Application
from consoles.text import count, humanise
from feedback.models import FlagStatus, Verdict
from feedback.selectors import (
    capture_volume_by_day,
    flag_approvals_by_axis_verdict,
    flag_count_in_status,
    flag_decision_delays,
    flag_decisions_by_day,
    flag_transitions_by_day,
)
from sampling.comparison import MIN_GOLD_LABELS
from sampling.selectors import gold_labelled_count, plan_outcomes
from teaching.models import ProposalState
from teaching.selectors import AUTO_REJECTED, proposal_gate_outcomes, proposal_state_counts_between

from .series import days_between, grid, status_levels
from .svg import Chart, Marker, Series, bar_chart, line_chart, stacked_bar_chart


@dataclass
class Section:
    key: str
    title: str
    caption: str
    charts: list[Chart] = field(default_factory=list)
    note: str = ""
    empty_message: str = "Nothing in this range."
    extra_table: tuple[list[str], list[list[str]]] | None = None
    wide: bool = False  # spans the whole grid (a chart and a table side by side)

    @property
    def empty(self) -> bool:
        return not any(not chart.empty for chart in self.charts)


def _day_label(day: date) -> str:
    return day.strftime("%b %d")


def _hours(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds / 3600, 2)


def _duration(seconds: float) -> str:
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    if seconds < 86400 * 2:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


TRANSITION_KEYS = ["new flag", "re-opened", "approved", "rejected", "labelled", "dropped"]


def _transition_key(from_status: str, to_status: str) -> str:
    if not from_status:
        return "new flag"
    if to_status == FlagStatus.PENDING:
        return "re-opened"
    return to_status


def backlog(application: Application, days: list[date], today: date) -> Section:
    section = Section(
        key="backlog",
        title="Pending backlog by status",
        caption=(
            "Flags and captures pending at the end of each day (UTC), replayed from the flag history, "
            "and each day's transitions by the status they led to."
        ),
    )
    # Ranges that end in the future stop at today: no level is known yet.
    shown = [d for d in days if d <= today]
    if not shown:
        return section
    transitions = flag_transitions_by_day(application=application, since=days[0])
    levels = status_levels(
        counts_now={FlagStatus.PENDING: flag_count_in_status(application=application, status=FlagStatus.PENDING)},
        transitions=transitions,
        days=shown,
        statuses=[FlagStatus.PENDING],
    )[FlagStatus.PENDING]
    keys, flows = grid(((day, _transition_key(a, b), n) for day, a, b, n in transitions), shown, TRANSITION_KEYS)
    keys = [k for k in keys if any(flows[k])]
    if not any(levels) and not keys:
        return section
    categories = [_day_label(d) for d in shown]
    section.charts.append(line_chart(
        title="Pending at the end of each day",
        categories=categories,
        series=[Series("Pending", levels)],
    ))
    if keys:
        section.charts.append(stacked_bar_chart(
            title="Transitions per day, by the status they led to",
            categories=categories,
            series=[Series(k, flows[k]) for k in keys],
        ))
    # levels[0] is the first day's end, not the range's start: say which day it is.
    section.note = (f"Pending at the end of {_day_label(shown[-1])}: {levels[-1]:,} "
                    f"(at the end of {_day_label(shown[0])}: {levels[0]:,}).")
    return section


def decisions(application: Application, days: list[date]) -> Section:
    first, last = days[0], days[-1]
    rows = flag_decisions_by_day(application=application, first=first, last=last)
    curators, values = grid(rows, days)
    section = Section(
        key="decisions",
        title="Decisions per day per curator",
        caption="Flags approved, rejected or labelled by each curator, per day.",
    )
    if curators:
        section.charts.append(stacked_bar_chart(
            title="Decisions per day per curator",
            categories=[_day_label(d) for d in days],
            series=[Series(name, values[name]) for name in curators],
        ))
        totals = {name: sum(values[name]) for name in curators}
        section.note = "In this range: " + ", ".join(f"{name} {n:,}" for name, n in totals.items()) + "."
    return section


def approvals(application: Application, days: list[date]) -> Section:
    first, last = days[0], days[-1]
    rows = flag_approvals_by_axis_verdict(application=application, first=first, last=last)
    axes = list(application.axes) + sorted({axis for axis, _, _ in rows} - set(application.axes))
    counts = {(axis, verdict): n for axis, verdict, n in rows}
    section = Section(
        key="approvals",
        title="Approvals per axis and verdict",
        caption="Approval decisions in the range: a miss (false negative) or an over-flag (false positive), per axis.",
    )
    if rows:
        section.charts.append(stacked_bar_chart(
            title="Approvals per axis and verdict",
            categories=[humanise(axis) for axis in axes],
            series=[Series(Verdict(v).label, [counts.get((axis, v), 0) for axis in axes]) for v in Verdict.values],
            first_header="Axis",
        ))
    return section


def delays(application: Application, days: list[date]) -> Section:
    first, last = days[0], days[-1]
    result = flag_decision_delays(application=application, first=first, last=last, quantiles=(0.5, 0.9))
    section = Section(
        key="delays",
        title="Time from flag to decision",
        caption="Median and 90th percentile of the hours from a flag's arrival to each decision on it, per day of decision.",
    )
    if result.overall.count:
        per_day = [result.by_day.get(d) for d in days]
        section.charts.append(line_chart(
            title="Hours from flag to decision (median and p90)",
            categories=[_day_label(d) for d in days],
            series=[
                Series("Median (hours)", [_hours(p.quantiles.get(0.5)) if p else None for p in per_day]),
                Series("90th percentile (hours)", [_hours(p.quantiles.get(0.9)) if p else None for p in per_day]),
            ],
            extra_columns=[Series("Decisions", [p.count if p else 0 for p in per_day])],
        ))
        q = result.overall.quantiles
        section.note = (
            f"Over the range ({count(result.overall.count, 'decision')}): median {_duration(q[0.5])}, "
            f"90th percentile {_duration(q[0.9])}."
        )
    return section


def captures(application: Application, days: list[date]) -> Section:
    first, last = days[0], days[-1]
    rows = capture_volume_by_day(application=application, first=first, last=last)

    def outcome(status: str, label: str) -> str:
        if status == FlagStatus.LABELLED:
            return f"labelled {humanise(label)}"
        return {"pending": "waiting for a label", "dropped": "dropped at capacity"}.get(status, status)

    keys = ["waiting for a label", *(f"labelled {humanise(label)}" for label in application.capture_labels),
            "dropped at capacity"]
    names, values = grid(((day, outcome(status, label), n) for day, status, label, n in rows), days, keys)
    names = [name for name in names if any(values[name])]
    section = Section(
        key="captures",
        title="Automated captures",
        caption="Low-confidence and refused answers the runtime captured per day, by what became of them.",
        empty_message=(
            "Capture is off for this application." if not application.capture_enabled else "Nothing in this range."
        ),
    )
    if names:
        section.charts.append(stacked_bar_chart(
            title="Automated captures per day, by label",
            categories=[_day_label(d) for d in days],
            series=[Series(name, values[name]) for name in names],
        ))
        section.note = f"{count(sum(sum(values[n]) for n in names), 'capture')} in this range."
    return section


def gold(application: Application, days: list[date]) -> Section:
    first, last = days[0], days[-1]
    rows = gold_promotions_by_day(application=application, first=first, last=last)
    index = {d: i for i, d in enumerate(days)}
    first, revised = [0] * len(days), [0] * len(days)
    for day, n_first, n_revised in rows:
        if day in index:
            first[index[day]] += n_first
            revised[index[day]] += n_revised
    section = Section(
        key="gold",
        title="Gold labels",
        caption="Gold labels promoted per day: a case's first gold label, or a revision of it.",
    )
    if any(first) or any(revised):
        section.charts.append(stacked_bar_chart(
            title="Gold labels promoted per day",
            categories=[_day_label(d) for d in days],
            series=[Series("First gold label", first), Series("Revision", revised)],
        ))
    total = gold_labelled_count(application=application)
    section.note = (
        f"{total:,} case{'s' if total != 1 else ''} have a gold label "
        f"({'past' if total >= MIN_GOLD_LABELS else 'below'} the {MIN_GOLD_LABELS}-case gate of the sampling comparison)."
    )
    return section


def agreement(application: Application, days: list[date]) -> Section:
    points = agreement_by_day(application=application, days=days)
    section = Section(
        key="agreement",
        title="Agreement (Cohen's kappa) over time",
        caption=(
            f"Kappa over every double-labelled case as it stood at the end of each day; "
            f"shown from {MIN_KAPPA_CASES} double-labelled cases (the gate)."
        ),
    )
    if not points or points[-1].n == 0:
        section.empty_message = "No case has two labels yet."
        return section
    gate = next((i for i, p in enumerate(points) if p.enough), None)
    markers = []
    if gate is not None and gate > 0:
        markers.append(Marker(gate, f"{MIN_KAPPA_CASES}-case gate"))
    section.charts.append(line_chart(
        title="Cohen's kappa at the end of each day",
        categories=[_day_label(p.day) for p in points],
        series=[Series("Kappa", [round(p.kappa, 3) if p.kappa is not None else None for p in points])],
        y_range=(0, 1),
        markers=markers,
        extra_columns=[Series("Double-labelled cases", [p.n for p in points])],
    ))
    last = points[-1]
    if last.enough:
        section.note = f"κ = {last.kappa:.3f} over {last.n} double-labelled cases." if last.kappa is not None else (
            f"Kappa is undefined over {last.n} cases (one label used throughout).")
    else:
        section.note = f"Not enough data yet ({last.n}/{MIN_KAPPA_CASES} double-labelled cases)."
    return section


def sampling(application: Application, days: list[date]) -> Section:
    first, last = days[0], days[-1]
    outcomes = plan_outcomes(application=application, first=first, last=last)
    section = Section(
        key="sampling",
        title="Sampling plans and what humans changed",
        caption=(
            "Each plan made in the range: of its selected cases, how many humans labelled, and how many of "
            "those they changed (the human answer disagrees with the pipeline's verdict)."
        ),
        empty_message="No sampling plan was made in this range.",
    )
    if outcomes:
        section.charts.append(stacked_bar_chart(
            title="Sampling plans: selected cases by outcome",
            categories=[o.label for o in outcomes],
            series=[
                Series("Changed by a human", [o.changed for o in outcomes]),
                Series("Labelled, unchanged", [o.labelled - o.changed for o in outcomes]),
                Series("Not labelled yet", [o.selected - o.labelled for o in outcomes]),
            ],
            first_header="Plan",
            extra_columns=[
                Series("Selected", [o.selected for o in outcomes]),
                Series("Queued by the plan", [o.queued for o in outcomes]),
            ],
        ))
    return section


STATE_LABELS = {
    ProposalState.PENDING: "Pending",
    ProposalState.ACCEPTED: "Accepted",
    ProposalState.REJECTED: "Rejected",  # by an operator; the gate's are "Auto-rejected" beside it
    AUTO_REJECTED: "Auto-rejected",
    ProposalState.WITHDRAWN: "Withdrawn",
}


def proposals(application: Application, days: list[date]) -> Section:
    first, last = days[0], days[-1]
    counts = proposal_state_counts_between(application=application, first=first, last=last)
    section = Section(
        key="proposals",
        title="Teaching proposals",
        caption="Proposals made in the range by state, and what the replay gate found for the newest ones.",
        empty_message="No proposal was made in this range.",
        wide=True,
    )
    if any(counts.values()):
        section.charts.append(bar_chart(
            title="Proposals by state",
            categories=list(STATE_LABELS.values()),
            values=[counts.get(state, 0) for state in STATE_LABELS],
            name="Proposals",
            first_header="State",
        ))
    gate_rows = []
    for p in proposal_gate_outcomes(application=application):
        outcome = "replay-equivalent" if p.replay_equivalent else "regression: " + ", ".join(p.regressed_metrics)
        state = AUTO_REJECTED if p.state == ProposalState.REJECTED and not p.replay_equivalent else p.state
        gate_rows.append([
            f"{p.created_at:%Y-%m-%d}", p.proposal_id[:12], f"{p.subject} {p.intent} {p.connective} {p.object}",
            outcome, STATE_LABELS[state],
        ])
    if gate_rows:
        section.extra_table = (["Proposed", "Proposal", "Chain", "Replay gate", "State"], gate_rows)
    return section


def build(application: Application, first: date, last: date, today: date) -> list[Section]:
    days = days_between(first, last)
    return [
        backlog(application, days, today),
        decisions(application, days),
        approvals(application, days),
        delays(application, days),
        captures(application, days),
        gold(application, days),
        agreement(application, days),
        sampling(application, days),
        proposals(application, days),
    ]

