"""Screens of the adjudication app: thin views, one per screen; writes go
through services and domain errors become form errors or messages."""

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from consoles.access import member_required
from consoles.errors import DomainError, NotFound
from consoles.models import Role
from consoles.pagination import cursor_link, screen_page
from consoles.text import humanise
from consoles.timestamps import on_screen
from feedback.selectors import case_feedback_list
from feedback.services import Actor as FeedbackActor
from feedback.services import case_feedback_submit

from .families import explain_families
from .forms import CaseFeedbackForm, CaseFilterForm, EnqueueForm, LabelForm, PromoteForm
from .fusion import fuse
from .gaps import GAP_LABELS, derive_gaps
from .models import Case, CaseLabel, QueueEntry
from .selectors import (
    CASES,
    application_agreement,
    case_evidence,
    case_get_by_ref,
    case_labels_for,
    case_list,
    evidence_records,
    gold_history,
    queue_entry_get,
    queue_open_for_case,
    queue_open_list,
)
from .services import (
    DEFAULT_LABELS_WANTED,
    MANUAL_REASON,
    gold_promote,
    label_submit,
    queue_claim_current,
    queue_claim_next,
    queue_enqueue,
    queue_release,
    queue_skip,
)

PAGE_SIZE = 50


def _case(request: HttpRequest, case_ref: str) -> Case:
    """The case in the URL's application, by its case id (or its number); another
    application's (or none) is a 404."""
    try:
        return case_get_by_ref(application=request.application, ref=case_ref)
    except NotFound as exc:
        raise Http404(exc.message) from exc


def _entry(request: HttpRequest, pk: int) -> QueueEntry:
    try:
        return queue_entry_get(application=request.application, pk=pk)
    except NotFound as exc:
        raise Http404(exc.message) from exc


def _case_url(request: HttpRequest, case: Case) -> str:
    return reverse("adjudication:case", args=[request.application.slug, case.ref])


@member_required()
def index(request: HttpRequest) -> HttpResponse:
    form = CaseFilterForm(request.GET or None)
    if form.is_bound and not form.is_valid():
        # Say what is wrong and list nothing: all cases under a filter the user
        # believes is applied would read as the filter's result.
        qs = Case.objects.none()
    else:
        filters = form.cleaned_data if form.is_bound else {}
        qs = case_list(
            application=request.application,
            q=filters.get("q", ""),
            status=filters.get("status", ""),
            strategy=filters.get("strategy", ""),
        )
    # By cursor, as GET /api/v1/cases: no COUNT over the filtered, annotated list
    # and no OFFSET, so a page costs the same at any depth and any size.
    page, cursor_error = screen_page(qs, CASES, cursor=request.GET.get("cursor"), limit=PAGE_SIZE)
    query = request.GET.copy()
    query.pop("cursor", None)
    query = query.urlencode()
    context = {"form": form, "cases": page.items, "cursor_error": cursor_error,
               "next_link": cursor_link(page.next_cursor, query),
               "previous_link": cursor_link(page.previous_cursor, query)}
    template = "adjudication/index.html#rows" if request.htmx else "adjudication/index.html"
    return render(request, template, context)


@member_required()
def case_detail(request: HttpRequest, case_ref: str) -> HttpResponse:
    return _render_case(request, _case(request, case_ref))


def _render_case(request: HttpRequest, case, *, label_form=None, feedback_form=None, status: int = 200) -> HttpResponse:
    application = request.application
    rows = case_evidence(case=case)
    records = evidence_records(rows)
    fusion = fuse(records)
    naive = fuse(records, collapse=False)
    gaps = sorted(derive_gaps(records))
    labels = case_labels_for(case=case, user=request.user)
    is_curator = request.membership.has_role(Role.CURATOR)
    entry = queue_open_for_case(case=case)
    history = list(gold_history(case=case))
    current_gold = history[0] if history else None
    context = {
        "case": case,
        "evidence": [(row, fusion.families.family_of[row.evidence_id]) for row in rows],
        "family_lines": explain_families(fusion.families),
        "fusion": fusion,
        "naive": naive,
        "gaps": [(g, GAP_LABELS[g]) for g in gaps],
        "labels": labels,
        "is_curator": is_curator,
        "entry": entry,
        "holds_claim": entry is not None and entry.claimed_by_id == request.user.pk,
        "label_form": label_form or (LabelForm(application=application) if is_curator and labels.own is None else None),
        "can_promote": is_curator and labels.own is not None,
        "gold_history": history,
        "current_gold": current_gold,
        "enqueue_form": (EnqueueForm(initial={"selection_reason": MANUAL_REASON})
                         if is_curator and entry is None and labels.total < DEFAULT_LABELS_WANTED else None),
        "feedback_form": feedback_form or CaseFeedbackForm(),
        "feedback": list(case_feedback_list(application=application, case_ref=case.case_id)[:20]),
        "manifest": sorted(case.replay_manifest.items()) if isinstance(case.replay_manifest, dict) else [],
    }
    return render(request, "adjudication/case.html", context, status=status)


@require_POST
@member_required(Role.CURATOR)
def label(request: HttpRequest, case_ref: str) -> HttpResponse:
    case = _case(request, case_ref)
    form = LabelForm(request.POST, application=request.application)
    if form.is_valid():
        try:
            label_submit(
                application=request.application,
                case=case,
                reviewer=request.user,
                label=form.cleaned_data["label"],
                rationale=form.cleaned_data["rationale"],
            )
        except DomainError as exc:
            exc.add_to_form(form)
        else:
            messages.success(request, "Label saved. Other curators' labels are now visible.")
            return redirect(_case_url(request, case))
    return _render_case(request, case, label_form=form, status=422)


@require_POST
@member_required(Role.CURATOR)
def promote(request: HttpRequest, case_ref: str) -> HttpResponse:
    case = _case(request, case_ref)
    form = PromoteForm(request.POST)
    if not form.is_valid():
        why = form.errors.get("rationale")
        messages.error(request, f"Not promoted: the reason: {why[0]}" if why else "Choose a label to promote.")
        return redirect(_case_url(request, case))
    chosen = CaseLabel.objects.filter(case=case, pk=form.cleaned_data["label_id"]).first()
    if chosen is None:
        messages.error(request, "That label is not on this case.")
        return redirect(_case_url(request, case))
    try:
        revision = gold_promote(
            application=request.application,
            case=case,
            label=chosen,
            adjudicator=request.user,
            rationale=form.cleaned_data["rationale"],
        )
    except DomainError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, f"Gold label is now “{humanise(revision.label)}” (revision {revision.revision}).")
    return redirect(_case_url(request, case))


def _already_queued(case: Case) -> str:
    entry = queue_open_for_case(case=case)
    if entry is None:  # its entry closed meanwhile
        return "This case was already in the queue; nothing was added."
    by = entry.created_by.get_username() if entry.created_by else "a sampling plan or command"
    return (f"This case is already in the queue, added on {on_screen(entry.created_at)} by {by} "
            f"(“{entry.selection_reason}”); nothing was added.")


@require_POST
@member_required(Role.CURATOR)
def enqueue(request: HttpRequest, case_ref: str) -> HttpResponse:
    case = _case(request, case_ref)
    form = EnqueueForm(request.POST)
    if form.is_valid():
        reason = form.cleaned_data["selection_reason"]
    elif (request.POST.get("selection_reason") or "").strip():
        # A reason was given but refused (too long): say so rather than file it as "manual".
        messages.error(request, f"Not added to the queue: the reason: {form.errors['selection_reason'][0]}")
        return redirect(_case_url(request, case))
    else:
        reason = MANUAL_REASON
    try:
        entry = queue_enqueue(application=request.application, case=case, selection_reason=reason, actor=request.user)
    except DomainError as exc:
        messages.error(request, exc.message)
    else:
        if entry is None:
            messages.info(request, _already_queued(case))
        else:
            messages.success(request, "Added to the queue.")
    return redirect(_case_url(request, case))


@require_POST
@member_required()
def feedback(request: HttpRequest, case_ref: str) -> HttpResponse:
    case = _case(request, case_ref)
    form = CaseFeedbackForm(request.POST)
    if form.is_valid():
        case_feedback_submit(
            application=request.application,
            case_ref=case.case_id,
            manifest=case.replay_manifest,
            disposition=form.cleaned_data["disposition"],
            note=form.cleaned_data["note"],
            actor=FeedbackActor(user=request.user),
        )
        messages.success(request, "Feedback recorded. It raises the case's priority; it is not a label.")
        return redirect(_case_url(request, case))
    return _render_case(request, case, feedback_form=form, status=422)


@member_required()
def queue(request: HttpRequest) -> HttpResponse:
    entries = list(queue_open_list(application=request.application)[:200])
    current = queue_claim_current(application=request.application, user=request.user)
    return render(
        request,
        "adjudication/queue.html",
        {
            "entries": entries,
            "current": current,
            "is_curator": request.membership.has_role(Role.CURATOR),
        },
    )


@member_required(Role.CURATOR)
def claim_next(request: HttpRequest) -> HttpResponse:
    if request.method != "POST":
        return redirect("adjudication:queue", app_slug=request.application.slug)
    entry = queue_claim_next(application=request.application, user=request.user)
    if entry is None:
        messages.info(request, "Nothing left in the queue for you.")
        return redirect("adjudication:queue", app_slug=request.application.slug)
    return redirect(_case_url(request, entry.case))


@require_POST
@member_required(Role.CURATOR)
def release(request: HttpRequest, entry_pk: int) -> HttpResponse:
    entry = _entry(request, entry_pk)
    try:
        queue_release(application=request.application, entry=entry, user=request.user)
    except DomainError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, "Released: another curator can take it.")
    return redirect("adjudication:queue", app_slug=request.application.slug)


@require_POST
@member_required(Role.CURATOR)
def skip(request: HttpRequest, entry_pk: int) -> HttpResponse:
    entry = _entry(request, entry_pk)
    try:
        queue_skip(application=request.application, entry=entry, user=request.user)
    except DomainError as exc:
        messages.error(request, exc.message)
        return redirect("adjudication:queue", app_slug=request.application.slug)
    following = queue_claim_next(application=request.application, user=request.user)
    if following is None:
        messages.info(request, "Skipped. Nothing else is waiting for you.")
        return redirect("adjudication:queue", app_slug=request.application.slug)
    messages.info(request, "Skipped; here is the next one.")
    return redirect(_case_url(request, following.case))


@member_required()
def agreement_page(request: HttpRequest) -> HttpResponse:
    result = application_agreement(application=request.application)
    rows = [
        (label, result.matrix[i], sum(result.matrix[i])) for i, label in enumerate(result.labels)
    ]
    col_totals = [sum(row[j] for row in result.matrix) for j in range(len(result.labels))]
    chart = _pair_chart(result.pairs)
    return render(
        request,
        "adjudication/agreement.html",
        {"result": result, "rows": rows, "col_totals": col_totals, "chart": chart, "chart_height": len(chart) * 44},
    )


CHART_WIDTH = 360


def _pair_chart(pairs) -> list[dict]:
    """Bars for the SVG chart: observed agreement and kappa per pair, in pixels
    (kappa runs from -1 to 1; its bar starts at the zero line in the middle)."""
    bars = []
    half = CHART_WIDTH / 2
    for i, pair in enumerate(pairs):
        kappa = pair.kappa
        bars.append(
            {
                "pair": pair,
                "y": i * 44,
                "observed_w": round(pair.observed * CHART_WIDTH, 1),
                "kappa_x": round(half + min(kappa, 0) * half, 1) if kappa is not None else None,
                "kappa_w": round(abs(kappa) * half, 1) if kappa is not None else None,
            }
        )
    return bars
