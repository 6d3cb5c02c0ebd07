"""Screens of the teaching app: thin views, one per screen; htmx swaps partials."""

from collections.abc import Iterable

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from consoles.access import member_required
from consoles.errors import DomainError
from consoles.extensions import HomeCard
from consoles.models import Application, Role
from consoles.pagination import cursor_link, screen_page
from consoles.tables import table_configure
from consoles.timestamps import on_screen

from . import selectors, services
from .domain import GATE_NAMES, SPLITS, check_eligibility, lanes, run_lanes
from .forms import DecisionForm, ProposeForm, StateFilterForm, SupersedeForm
from .models import ProposalEvent, ProposalState
from .tables import ProposalTable

CANDIDATE_PAGE = 100


def home_cards(application: Application) -> list[HomeCard]:
    return [
        HomeCard(
            title="Teaching proposals",
            count=selectors.proposal_pending_count(application=application),
            caption="passed the replay gate, waiting for an operator",
            url=reverse("teaching:index", args=[application.slug]),
        )
    ]


def _can_decide(request: HttpRequest) -> bool:
    return request.membership.has_role(Role.CURATOR)


@member_required()
def index(request: HttpRequest) -> HttpResponse:
    """Proposals by state (pending first); the tabs swap the table with htmx."""
    application = request.application
    state = StateFilterForm(request.GET).selected()
    proposals = selectors.proposal_list(application=application, state=None if state == "all" else state)
    table = ProposalTable(proposals, app_slug=application.slug)
    table_configure(request, table, per_page=50)
    counts = selectors.proposal_counts(application=application)
    context = {
        "table": table,
        "state": state,
        "states": [(value, label, counts[value]) for value, label in ProposalState.choices] + [("all", "All", None)],
    }
    template = "teaching/index.html#rows" if request.htmx else "teaching/index.html"
    return render(request, template, context)


def _with_state_labels(events: Iterable[ProposalEvent]) -> list[ProposalEvent]:
    """The events, each with the words for the state it left (`from_state` has no choices
    of its own: it is blank for the first event)."""
    labels = dict(ProposalState.choices)
    events = list(events)
    for event in events:
        event.from_state_label = labels.get(event.from_state, event.from_state)
    return events


def _proposal_context(request: HttpRequest, proposal, form: DecisionForm | None = None, error: str = "") -> dict:
    metrics = []
    regressed = set(proposal.regressed_metrics)
    for name in sorted(set(proposal.baseline) | set(proposal.candidate_metrics)):
        lane, _, rest = name.partition(".")
        metric, _, split = rest.partition(".")
        baseline = proposal.baseline.get(name)
        candidate = proposal.candidate_metrics.get(name)
        metrics.append(
            {
                "name": name, "lane": lane, "metric": metric, "split": split,
                "baseline": baseline, "candidate": candidate,
                "delta": None if baseline is None or candidate is None else candidate - baseline,
                "regressed": name in regressed,
            }
        )
    return {
        "proposal": proposal,
        "metrics": metrics,
        "events": _with_state_labels(selectors.proposal_event_list(application=request.application, proposal=proposal)),
        "decision": getattr(proposal, "decision", None) if proposal.state != ProposalState.PENDING else None,
        "corpus_entry": getattr(proposal, "corpus_entry", None) if proposal.state == ProposalState.ACCEPTED else None,
        "form": form or DecisionForm(),
        "can_decide": _can_decide(request),
        "error": error,
    }


@member_required()
def proposal_detail(request: HttpRequest, proposal_id: str) -> HttpResponse:
    try:
        proposal = selectors.proposal_get(application=request.application, proposal_id=proposal_id)
    except DomainError as exc:
        raise Http404(exc.message) from exc
    return render(request, "teaching/proposal.html", _proposal_context(request, proposal))


@require_POST
@member_required(Role.CURATOR)
def proposal_decide(request: HttpRequest, proposal_id: str) -> HttpResponse:
    """Accept / reject / withdraw with a note. With htmx the status panel is swapped
    in place (errors included, status 200 so htmx swaps them); without JS a success
    redirects back to the proposal and an error re-renders the page."""
    application = request.application
    try:
        selectors.proposal_get(application=application, proposal_id=proposal_id)
    except DomainError as exc:
        raise Http404(exc.message) from exc
    form = DecisionForm(request.POST)
    error = ""
    if form.is_valid():
        try:
            services.proposal_decide(
                application=application,
                proposal_id=proposal_id,
                decision=form.cleaned_data["decision"],
                operator=request.user,
                note=form.cleaned_data["note"],
            )
        except DomainError as exc:
            error = exc.message
        else:
            if not request.htmx:
                messages.success(request, "Decision recorded.")
                return redirect("teaching:proposal", app_slug=application.slug, proposal_id=proposal_id)
            form = DecisionForm()
    elif "decision" in form.errors:
        error = "Choose accept, reject or withdraw."
    else:
        error = "Not recorded: see the note."
    proposal = selectors.proposal_get(application=application, proposal_id=proposal_id)
    context = _proposal_context(request, proposal, form=form, error=error)
    if request.htmx:
        # The status panel where the buttons were, and the history (a new event) beside it.
        status = render_to_string("teaching/proposal.html#status", context, request)
        history = render_to_string("teaching/proposal.html#history", {**context, "oob": True}, request)
        return HttpResponse(status + history)
    return render(request, "teaching/proposal.html", context, status=422 if error else 200)


@member_required()
def candidate_list(request: HttpRequest) -> HttpResponse:
    """Candidates with the five gates evaluated in memory (no query per row)."""
    qs = selectors.candidate_list(application=request.application).prefetch_related("proposals")
    page, error = screen_page(qs, selectors.CANDIDATES, cursor=request.GET.get("cursor"), limit=CANDIDATE_PAGE)
    rows = []
    for candidate in page.items:
        gates = check_eligibility(services.candidate_facts(candidate))
        proposals = list(candidate.proposals.all())
        # The operator's allow-evaluative flag can only lift the evaluative gate.
        proposable = all(g.passed for g in gates if g.gate != "evaluative_allowed")
        rows.append({"candidate": candidate, "gates": gates, "proposable": proposable,
                     "proposal": proposals[0] if proposals else None})
    return render(
        request,
        "teaching/candidates.html",
        {"rows": rows, "gate_names": GATE_NAMES, "can_decide": _can_decide(request), "form": ProposeForm(),
         "error": error,
         "next_link": cursor_link(page.next_cursor), "previous_link": cursor_link(page.previous_cursor)},
    )


@require_POST
@member_required(Role.CURATOR)
def candidate_propose(request: HttpRequest, candidate_id: str) -> HttpResponse:
    # Another application's candidate is a 404 like any object of another tenant,
    # not a message on this application's candidates page.
    try:
        selectors.candidate_get(application=request.application, candidate_id=candidate_id)
    except DomainError as exc:
        raise Http404(exc.message) from exc
    form = ProposeForm(request.POST)
    allow = form.is_valid() and form.cleaned_data["allow_evaluative"]
    try:
        proposal, created = services.proposal_create(
            application=request.application,
            candidate_id=candidate_id,
            allow_evaluative=allow,
            actor=services.Actor.human(request.user),
        )
    except DomainError as exc:
        messages.error(request, exc.message)
        return redirect("teaching:candidates", app_slug=request.application.slug)
    if proposal.state == ProposalState.REJECTED and created:
        messages.warning(request, f"The replay gate rejected it: {proposal.operator_note}")
    elif created:
        messages.success(request, "Proposed: replay-equivalent, waiting for an operator.")
    else:
        messages.info(
            request,
            f"This candidate was already proposed on {on_screen(proposal.created_at)} "
            f"(now {proposal.get_state_display().lower()}); a candidate is proposed once, so here is that proposal.",
        )
    return redirect("teaching:proposal", app_slug=request.application.slug, proposal_id=proposal.proposal_id)


@member_required()
def evals(request: HttpRequest) -> HttpResponse:
    """Eval lanes, their cases per split, and the metrics on the active corpus now."""
    application = request.application
    cases = list(selectors.eval_case_list(application=application))
    metrics = run_lanes(
        selectors.corpus_active_chains(application=application),
        selectors.eval_case_facts(application=application),
    )
    by_split = {split: [c for c in cases if c.split == split] for split in SPLITS}
    lane_rows = []
    for lane in lanes():
        names = sorted({name.split(".")[1] for name in metrics if name.startswith(lane.key + ".")})
        lane_rows.append({
            "lane": lane,
            "metrics": [
                {"name": metric, "values": [metrics.get(f"{lane.key}.{metric}.{split}") for split in SPLITS]}
                for metric in names
            ],
        })
    return render(
        request, "teaching/evals.html", {"by_split": by_split, "lanes": lane_rows, "splits": SPLITS, "total": len(cases)}
    )


@require_http_methods(["GET", "POST"])
@member_required()
def corpus(request: HttpRequest) -> HttpResponse:
    """Every corpus entry with its provenance; a curator retires one through a
    supersession (a separate operator action, never part of an accept)."""
    application = request.application
    form = SupersedeForm()
    if request.method == "POST":
        if not _can_decide(request):
            raise PermissionDenied("This needs the curator role.")
        form = SupersedeForm(request.POST)
        if form.is_valid():
            try:
                services.corpus_supersede(
                    application=application,
                    entry_number=form.cleaned_data["entry"],
                    superseded_by_number=form.cleaned_data["superseded_by"],
                    operator=request.user,
                    note=form.cleaned_data["note"],
                )
            except DomainError as exc:
                form.add_error(None, exc.message)
            else:
                messages.success(request, f"Entry {form.cleaned_data['entry']} retired.")
                return redirect("teaching:corpus", app_slug=application.slug)
    entries = list(selectors.corpus_list(application=application))
    return render(
        request,
        "teaching/corpus.html",
        {"entries": entries, "active": sum(1 for e in entries if not hasattr(e, "supersession")),
         "form": form, "can_decide": _can_decide(request)},
        status=422 if form.errors else 200,
    )
