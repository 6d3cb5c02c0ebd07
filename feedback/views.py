"""The triage queue: one view per screen, full page or an htmx partial.

Everything works without JavaScript: links and plain form posts; htmx only
swaps the table or the detail pane in place, and queue.js adds keys.
"""

from collections.abc import Callable
from urllib.parse import urlencode

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_http_methods

from consoles.access import member_required
from consoles.errors import Conflict, DomainError, InvalidInput, NotFound
from consoles.models import Role
from consoles.pagination import cursor_link
from consoles.text import humanise

from .forms import FILTER_KEYS, BulkRejectForm, FlagFilterForm, ReviewForm
from .models import Flag, FlagStatus, Verdict
from .selectors import (
    FlagFilters,
    flag_events,
    flag_get,
    flag_neighbours,
    flag_next_pending,
    flag_page,
)
from .services import flag_bulk_reject, flag_claim, flag_review
from .tables import AUTHOR_LABELS, FlagTable

SESSION_FILTERS = "feedback:filters:{slug}"
DEFAULT_FILTERS = "status=pending"


def _filter_querystring(params: QueryDict) -> str:
    """The filters and sort of a request, without the cursor (for links and redirects)."""
    return urlencode([(k, v) for k in FILTER_KEYS for v in params.getlist(k) if k in params])


def _queue_url(slug: str, querystring: str = "") -> str:
    url = reverse("feedback:queue", args=[slug])
    return f"{url}?{querystring}" if querystring else url


def _detail_url(slug: str, flag: Flag, querystring: str = "") -> str:
    url = reverse("feedback:detail", args=[slug, flag.public_id])
    return f"{url}?{querystring}" if querystring else url


def _flag_or_404(request: HttpRequest, public_id: str) -> Flag:
    try:
        return flag_get(application=request.application, public_id=public_id)
    except NotFound as exc:
        raise Http404("No such flag.") from exc


def _can_decide(request: HttpRequest) -> bool:
    return request.membership.has_role(Role.CURATOR)


def _queue_context(request: HttpRequest, current: Flag | None = None) -> dict:
    application = request.application
    form = FlagFilterForm(request.GET or None, application=application)
    querystring = _filter_querystring(request.GET)
    page = None
    filters, order = FlagFilters(), "-created"
    if form.is_bound and not form.is_valid():
        rows: list[Flag] = []
    else:
        if form.is_bound:
            filters, order = form.filters(), form.order()
        try:
            page = flag_page(application=application, filters=filters, order=order,
                             cursor=request.GET.get("cursor") or None)
            rows = page.items
        except InvalidInput as exc:
            # A stale or hand-edited cursor: show the error, not a 500.
            form.add_error(None, exc.message)
            rows = []
    table = FlagTable(
        rows, application=application, querystring=querystring,
        current_pk=current.pk if current else None, order_by=order,
        exclude=() if _can_decide(request) else ("select",),
    )

    return {
        "filter_form": form,
        "table": table,
        "next_link": cursor_link(page.next_cursor if page else None, querystring),
        "previous_link": cursor_link(page.previous_cursor if page else None, querystring),
        "querystring": querystring,
        "filters": filters,
        "order": order,
        "can_decide": _can_decide(request),
        "queue_url": _queue_url(application.slug, querystring),
    }


def _partial(request: HttpRequest) -> str | None:
    """Which region an htmx request asked for; None for a full page (incl. history restore)."""
    if not request.htmx or request.htmx.history_restore_request:
        return None
    return "detail" if request.htmx.target == "detail" else "rows"


@member_required()
def queue(request: HttpRequest) -> HttpResponse:
    key = SESSION_FILTERS.format(slug=request.application.slug)
    if not request.GET:
        # The bare URL always lands on explicit filters (so the URL, history and
        # back button describe what is shown): the user's own last filters, kept
        # in their session and never shared, or the pending queue.
        return redirect(_queue_url(request.application.slug, request.session.get(key) or DEFAULT_FILTERS))
    querystring = _filter_querystring(request.GET)
    if request.session.get(key) != querystring:  # no session write when nothing changed
        request.session[key] = querystring
    context = _queue_context(request)
    partial = _partial(request)
    template = "feedback/queue.html#rows" if partial else "feedback/queue.html"
    return render(request, template, context)


_CHANGE_NAMES = {"capture_label": "label", "twin_prompt": "twin prompt", "twin_answer": "twin answer",
                 "attack_family": "attack family"}
_VERDICT_LABELS = dict(Verdict.choices)
# How a changed value reads: a verdict by its label, an axis or a capture label as words.
_CHANGE_WORDS: dict[str, Callable[[str], str]] = {
    "verdict": lambda v: _VERDICT_LABELS.get(v, v), "axis": humanise, "capture_label": humanise,
}
_CHANGE_HIDDEN = {"status", "note", "reason", "capture_max_items"}  # shown elsewhere in the row, or internal


def _change_lines(event) -> list[tuple[str, object, object]]:
    """An event's field changes as people read them: (field, before, after)."""
    lines = []
    for name, change in (event.changes or {}).items():
        if name in _CHANGE_HIDDEN or not isinstance(change, list | tuple) or len(change) != 2:
            continue
        words = _CHANGE_WORDS.get(name)
        before, after = (words(v) if words and isinstance(v, str) else v for v in change)
        lines.append((_CHANGE_NAMES.get(name, name), before, after))
    return lines


def _detail_context(request: HttpRequest, flag: Flag) -> dict:
    context = _queue_context(request, current=flag)
    previous, following = flag_neighbours(application=request.application, flag=flag,
                                          filters=context["filters"], order=context["order"])
    qs = context["querystring"]
    slug = request.application.slug
    context.update(
        flag=flag,
        events=[(event, _change_lines(event)) for event in flag_events(flag=flag)],
        problem_label={p["key"]: p["label"] for p in request.application.problems}.get(flag.problem, flag.problem),
        author_label=AUTHOR_LABELS.get(flag.author_kind, flag.author_kind),
        scores=sorted(flag.detector_scores.items()),
        previous_url=_detail_url(slug, previous, qs) if previous else None,
        next_url=_detail_url(slug, following, qs) if following else None,
        review_action=reverse("feedback:review", args=[slug, flag.public_id]) + (f"?{qs}" if qs else ""),
        claimed_by_other=(
            flag.claimed_by_id is not None and flag.claimed_by_id != request.user.pk
            and flag.claimed_until is not None and flag.claimed_until > timezone.now()
        ),
    )
    if "review_form" not in context:
        context["review_form"] = ReviewForm(
            initial={"version": flag.version, "axis": flag.axis or flag.suggested_axis,
                     "verdict": flag.verdict or "false_negative", "label": flag.capture_label or None},
            application=request.application,
        )
    return context


@member_required()
def detail(request: HttpRequest, public_id: str) -> HttpResponse:
    flag = _flag_or_404(request, public_id)
    if flag.status == FlagStatus.PENDING and _can_decide(request):
        flag_claim(flag=flag, user=request.user)
    context = _detail_context(request, flag)
    partial = _partial(request)
    template = f"feedback/queue.html#{partial}" if partial else "feedback/queue.html"
    return render(request, template, context)


@member_required()
def next_pending(request: HttpRequest) -> HttpResponse:
    """Open the oldest pending flag (within the current filters) nobody else has open."""
    application = request.application
    form = FlagFilterForm(request.GET or None, application=application)
    filters = form.filters() if form.is_bound and form.is_valid() else FlagFilters()
    qs = _filter_querystring(request.GET)
    return _open_next(request, filters, qs)


def _open_next(request: HttpRequest, filters: FlagFilters, qs: str, exclude_pk: int | None = None) -> HttpResponse:
    application = request.application
    for _ in range(5):  # a concurrent curator may claim the candidate first
        candidate = flag_next_pending(application=application, user=request.user, filters=filters,
                                      exclude_pk=exclude_pk)
        if candidate is None:
            break
        if not _can_decide(request) or flag_claim(flag=candidate, user=request.user):
            return redirect(_detail_url(application.slug, candidate, qs))
    messages.info(request, "No pending flags left here.")
    return redirect(_queue_url(application.slug, qs))


def _conflict_state(current: dict) -> dict:
    """The state a conflict reports, with the words for its status and verdict keys."""
    status, verdict = current.get("status") or "", current.get("verdict") or ""
    return {
        **current,
        "status_label": FlagStatus(status).label.lower() if status in FlagStatus.values else status,
        "verdict_label": Verdict(verdict).label if verdict in Verdict.values else verdict,
    }


@member_required(Role.CURATOR)
@require_http_methods(["POST"])
def review(request: HttpRequest, public_id: str) -> HttpResponse:
    application = request.application
    flag = _flag_or_404(request, public_id)
    form = ReviewForm(request.POST, application=application)
    qs = _filter_querystring(request.GET)
    if form.is_valid():
        try:
            flag = flag_review(flag=flag, reviewer=request.user, **form.service_kwargs())
        except Conflict as exc:
            flag = flag_get(application=application, public_id=public_id)
            messages.error(request, f"Not saved: {exc.message}")
            context = _detail_context(request, flag)
            context["conflict"] = _conflict_state(exc.current or {})
            context["shown_url"] = _detail_url(application.slug, flag, qs)
            return render(request, "feedback/queue.html", context, status=409)
        except DomainError as exc:
            exc.add_to_form(form)
        else:
            verb = {"approved": "Approved", "rejected": "Rejected", "pending": "Re-opened",
                    "labelled": "Labelled"}[flag.status]
            messages.success(request, f"{verb} {flag.public_id}.")
            if flag.status == FlagStatus.PENDING:
                return redirect(_detail_url(application.slug, flag, qs))
            filter_form = FlagFilterForm(request.GET or None, application=application)
            filters = filter_form.filters() if filter_form.is_bound and filter_form.is_valid() else FlagFilters()
            return _open_next(request, filters, qs, exclude_pk=flag.pk)
    context = _detail_context(request, flag)
    context["review_form"] = form
    context["review_decision"] = form.data.get("decision")
    context["shown_url"] = _detail_url(application.slug, flag, qs)
    return render(request, "feedback/queue.html", context, status=422)


@member_required(Role.CURATOR)
@require_http_methods(["GET", "POST"])
def bulk_reject(request: HttpRequest) -> HttpResponse:
    application = request.application
    qs = _filter_querystring(request.GET)
    if request.method == "GET":
        return HttpResponseRedirect(_queue_url(application.slug, qs))
    form = BulkRejectForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Select at least one flag to reject.")
        return redirect(_queue_url(application.slug, qs))
    try:
        rejected, skipped = flag_bulk_reject(application=application, reviewer=request.user,
                                             public_ids=form.cleaned_data["ids"],
                                             note=form.cleaned_data.get("note") or "")
    except DomainError as exc:
        messages.error(request, exc.message)
        return redirect(_queue_url(application.slug, qs))
    if rejected:
        messages.success(request, f"Rejected {len(rejected)} flag{'s' if len(rejected) != 1 else ''}.")
    if skipped:
        messages.warning(
            request,
            f"Skipped {len(skipped)} that were no longer pending (decided meanwhile): {', '.join(skipped[:10])}",
        )
    return redirect(_queue_url(application.slug, qs))
