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
from django.utils.crypto import get_random_string
from django.views.decorators.http import require_http_methods

from consoles.access import member_required
from consoles.errors import Conflict, DomainError, InvalidInput, NotFound
from consoles.models import Role
from consoles.pagination import cursor_link
from consoles.text import humanise

from .forms import FILTER_KEYS, BulkRejectForm, FlagFilterForm, ReviewForm
from .models import Flag, FlagStatus, Region, Verdict
from .selectors import (
    FlagFilters,
    flag_events,
    flag_get,
    flag_last_correction,
    flag_neighbours,
    flag_next_pending,
    flag_page,
    flags_by_public_ids,
)
from .services import NOTE_LIMIT, flag_bulk_reject, flag_bulk_reopen, flag_claim, flag_review
from .tables import AUTHOR_LABELS, ROW_FIELDS, FlagTable, row_views

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
    cursor_error = ""
    filters, order = FlagFilters(), "-created"
    if form.is_bound and not form.is_valid():
        rows: list[Flag] = []
    else:
        if form.is_bound:
            filters, order = form.filters(), form.order()
        try:
            page = flag_page(application=application, filters=filters, order=order,
                             cursor=request.GET.get("cursor") or None, fields=ROW_FIELDS)
        except InvalidInput as exc:
            # A stale or hand-edited cursor: the newest page, saying so (as Cases does).
            cursor_error = exc.message
            page = flag_page(application=application, filters=filters, order=order, cursor=None,
                             fields=ROW_FIELDS)
        rows = page.items
    table = FlagTable(
        rows, application=application, querystring=querystring,
        current_pk=current.pk if current else None, order_by=order,
        exclude=() if _can_decide(request) else ("select",),
    )

    return {
        "filter_form": form,
        "cursor_error": cursor_error,
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
    if not partial:
        context["undo"] = _take_undo(request)
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


def _review_initial(flag: Flag) -> dict:
    initial = {"version": flag.version, "axis": flag.axis or flag.suggested_axis}
    if flag.region == Region.ANSWER and not flag.is_capture:
        initial["correction"] = flag_last_correction(flag=flag)
    return initial


def _detail_context(request: HttpRequest, flag: Flag, form: ReviewForm | None = None) -> dict:
    context = _queue_context(request, current=flag)
    if form is not None:
        decision = form.data.get("decision")
        context["review_decision"] = decision
        if decision in ("approved", "labelled"):
            context["review_form"] = form
        else:
            context["review_form"] = ReviewForm(
                initial=_review_initial(flag),
                application=request.application)
            context["other_form"] = form
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
        # No verdict and no label here: human truth is chosen, never defaulted.
        context["review_form"] = ReviewForm(
            initial=_review_initial(flag),
            application=request.application,
        )
    context.update(_form_context(context.get("other_form") or context["review_form"], flag,
                                 context.get("review_decision")))
    if "other_form" in context:  # the approve or label form beside it shows no values from the other
        context.update(verdict_options=_form_context(context["review_form"], flag, None)["verdict_options"],
                       twin_fields=[context["review_form"][name] for name in _TWIN_FIELDS])
    holds = flag.claimed_by_id == request.user.pk and flag.claimed_until is not None \
        and flag.claimed_until > timezone.now()
    context.update(
        claim_url=reverse("feedback:claim", args=[slug, flag.public_id]) if (
            _can_decide(request) and flag.status == FlagStatus.PENDING and not holds
            and not context["claimed_by_other"]) else None,
        texts=[(title, key, text, _is_long(text)) for title, key, text in (
            ("Note", "note", flag.note), ("Prompt", "prompt", flag.prompt or "—"),
            ("Context", "context", flag.context), ("Answer", "answer", flag.answer or "—"))
            if text],  # no note or context: no heading for it
    )
    return context


_TWIN_FIELDS = ("twin_prompt", "twin_answer", "weight", "attack_family")
# Errors with no field of their own on the screen (hidden inputs, the decision itself).
_FIELD_NAMES = {"version": "Version", "decision": "Decision", "status": "Decision"}


def _form_context(form: ReviewForm, flag: Flag, decision: str | None) -> dict:
    """What the decision forms show: the choices with their keys (nothing chosen unless
    the curator chose it), and each error beside its own field, in the form it came from."""
    bound = form.is_bound
    chosen_verdict = form.data.get("verdict") if bound else None
    chosen_label = form.data.get("label") if bound else None
    own = decision in ("approved", "labelled")
    errors = form.errors if bound else {}
    for name in errors:
        if name in form.fields and own:  # tie each field to its message for screen readers
            form.fields[name].widget.attrs["aria-describedby"] = f"review_{name}-error"
    return {
        "verdict_options": [(value, text, str(i), value == chosen_verdict)
                            for i, (value, text) in enumerate(Verdict.choices, start=1)],
        "label_options": [(value, humanise(value), str(i), value == chosen_label)
                          for i, value in enumerate(flag.application.capture_labels[:9], start=1)],
        "twin_fields": [form[name] for name in _TWIN_FIELDS],
        "twin_open": own and any(name in errors for name in _TWIN_FIELDS),
        "decide_errors": [f"{_FIELD_NAMES[name]}: {' '.join(errors[name])}" if name in _FIELD_NAMES
                          else " ".join(errors[name]) for name in ("__all__", *_FIELD_NAMES) if name in errors],
        "reject_errors": {} if own or not bound else {k: v for k, v in errors.items() if k == "note"},
        "reject_note": form.data.get("note", "") if bound and decision == "rejected" else "",
        "note_limit": NOTE_LIMIT,
    }


FOLD_CHARS, FOLD_LINES = 1_500, 24


def _is_long(text: str) -> bool:
    """Folded behind "show all": a pasted transcript must not make the pane metres tall."""
    return len(text) > FOLD_CHARS or text.count("\n") >= FOLD_LINES


@member_required()
@require_http_methods(["GET", "HEAD"])
def detail(request: HttpRequest, public_id: str) -> HttpResponse:
    # A GET only reads: the pane claims the flag with a POST of its own (htmx, on open).
    flag = _flag_or_404(request, public_id)
    context = _detail_context(request, flag)
    partial = _partial(request)
    template = f"feedback/queue.html#{partial}" if partial else "feedback/queue.html"
    return render(request, template, context)


def _list_filters(request: HttpRequest) -> tuple[FlagFilters, str]:
    """The queue's filters and order as the request's query string gives them."""
    form = FlagFilterForm(request.GET or None, application=request.application)
    if form.is_bound and form.is_valid():
        return form.filters(), form.order()
    return FlagFilters(), "-created"


@member_required()
@require_http_methods(["GET", "POST"])
def next_pending(request: HttpRequest) -> HttpResponse:
    """Open the first pending flag in the list's own order and filters that nobody else
    has open. Only the POST (the button) claims it; a GET (an old link) just opens it."""
    filters, order = _list_filters(request)
    qs = _filter_querystring(request.GET)
    following = _claim_next(request, filters, order, claim=request.method == "POST")
    if following is None:
        messages.info(request, "No pending flags left here.")
        return redirect(_queue_url(request.application.slug, qs))
    return redirect(_detail_url(request.application.slug, following, qs))


def _claim_next(request: HttpRequest, filters: FlagFilters, order: str, *, after: Flag | None = None,
                claim: bool = True) -> Flag | None:
    """The next pending flag below `after` in the list's order, claimed for this curator."""
    application = request.application
    for _ in range(5):  # a concurrent curator may claim the candidate first
        candidate = flag_next_pending(application=application, user=request.user, filters=filters, order=order,
                                      after=after, exclude_pk=after.pk if after else None)
        if candidate is None:
            return None
        if not claim or not _can_decide(request) or flag_claim(flag=candidate, user=request.user):
            return candidate
    return None


@member_required(Role.CURATOR)
@require_http_methods(["POST"])
def claim(request: HttpRequest, public_id: str) -> HttpResponse:
    """The pane's claim on open (htmx posts it as the flag is shown): advisory, it
    steers "Next pending" for the others and decides nothing."""
    flag = _flag_or_404(request, public_id)
    flag_claim(flag=flag, user=request.user)
    if request.htmx:
        return HttpResponse(status=204)
    return redirect(_detail_url(request.application.slug, flag, _filter_querystring(request.GET)))


def _conflict_state(current: dict) -> dict:
    """The state a conflict reports, with the words for its status and verdict keys."""
    status, verdict = current.get("status") or "", current.get("verdict") or ""
    return {
        **current,
        "status_label": FlagStatus(status).label.lower() if status in FlagStatus.values else status,
        "verdict_label": Verdict(verdict).label if verdict in Verdict.values else verdict,
    }


_VERBS = {"approved": "Approved", "rejected": "Rejected", "pending": "Re-opened", "labelled": "Labelled"}


@member_required(Role.CURATOR)
@require_http_methods(["POST"])
def review(request: HttpRequest, public_id: str) -> HttpResponse:
    """A decision. With htmx it is answered in place (the pane shows the next flag, the
    decided row its new state); a plain form post redirects to the next flag."""
    application = request.application
    flag = _flag_or_404(request, public_id)
    form = ReviewForm(request.POST, application=application)
    qs = _filter_querystring(request.GET)
    partial = "feedback/queue.html#detail" if request.htmx else "feedback/queue.html"
    if form.is_valid():
        try:
            flag = flag_review(flag=flag, reviewer=request.user, **form.service_kwargs())
        except Conflict as exc:
            flag = flag_get(application=application, public_id=public_id)
            # Said once, in the pane beside the flag's current state (not also as a banner).
            context = _detail_context(request, flag)
            context["conflict"] = _conflict_state(exc.current or {})
            context["shown_url"] = _detail_url(application.slug, flag, qs)
            return render(request, partial, context, status=409)
        except DomainError as exc:
            exc.add_to_form(form)
        else:
            said = f"{_VERBS[flag.status]} {flag.public_id}."
            following = None
            if flag.status != FlagStatus.PENDING:
                filters, order = _list_filters(request)
                following = _claim_next(request, filters, order, after=flag)
            elif not request.htmx:
                messages.success(request, said)
                return redirect(_detail_url(application.slug, flag, qs))
            if not request.htmx:
                messages.success(request, said)
                if following is None:
                    messages.info(request, "No pending flags left here.")
                    return redirect(_queue_url(application.slug, qs))
                return redirect(_detail_url(application.slug, following, qs))
            return _decided(request, flag, following if flag.status != FlagStatus.PENDING else flag, said, qs)
    # The form that was sent keeps its values and shows its errors; the other forms start afresh.
    context = _detail_context(request, flag, form=form)
    context["shown_url"] = _detail_url(application.slug, flag, qs)
    return render(request, partial, context, status=422)


def _decided(request: HttpRequest, decided: Flag, shown: Flag | None, said: str, qs: str) -> HttpResponse:
    """The htmx answer to a decision: the pane for `shown` (the next flag, or the one
    re-opened), the decided row out of band, and what happened in the status line."""
    slug = request.application.slug
    if shown is not None:
        context = _detail_context(request, shown)
        url = _detail_url(slug, shown, qs)
    else:
        context = _queue_context(request)
        context["none_left"] = True
        said += " No pending flags left here."
        url = _queue_url(slug, qs)
    context.update(decided=row_views([decided], application=request.application, querystring=qs)[0],
                   said=said, focus_title=True,
                   current_pk=shown.pk if shown else None)
    response = render(request, "feedback/queue.html#decided", context)
    response["HX-Push-Url"] = url
    return response


SESSION_UNDO = "feedback:undo:{slug}"
_AUTHOR_ONE = {"end_user": "an end user", "operator": "an operator", "agent": "an automated agent"}
_AUTHOR_PLURAL = {"end_user": "end users", "operator": "operators", "agent": "automated agents"}


@member_required(Role.CURATOR)
@require_http_methods(["GET", "POST"])
def bulk_reject(request: HttpRequest) -> HttpResponse:
    """Reject the selected flags, in two steps: a page that says how many and of which
    kinds (and what is left out), then the decision, whose message offers an undo."""
    application = request.application
    qs = _filter_querystring(request.GET)
    if request.method == "GET":
        return HttpResponseRedirect(_queue_url(application.slug, qs))
    form = BulkRejectForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Select at least one flag to reject.")
        return redirect(_queue_url(application.slug, qs))
    ids, note = form.cleaned_data["ids"], form.cleaned_data.get("note") or ""
    if not request.POST.get("confirm"):
        return render(request, "feedback/bulk_confirm.html", _bulk_summary(request, ids, note, qs))
    try:
        rejected, skipped = flag_bulk_reject(application=application, reviewer=request.user,
                                             public_ids=ids, note=note)
    except DomainError as exc:
        messages.error(request, exc.message)
        return redirect(_queue_url(application.slug, qs))
    if rejected:
        versions = dict(flags_by_public_ids(application=application, public_ids=rejected)
                        .values_list("public_id", "version"))
        request.session[SESSION_UNDO.format(slug=application.slug)] = {
            "batch": get_random_string(12), "versions": versions, "shown": False}
    if skipped:
        messages.warning(
            request,
            f"Skipped {len(skipped)} that were not pending flags (decided meanwhile, or captures): "
            f"{', '.join(skipped[:10])}",
        )
    return redirect(_queue_url(application.slug, qs))


def _bulk_summary(request: HttpRequest, ids: list[str], note: str, qs: str) -> dict:
    flags = list(flags_by_public_ids(application=request.application, public_ids=ids))
    pending = [f for f in flags if f.status == FlagStatus.PENDING and not f.is_capture]
    kinds: dict[str, int] = {}
    for flag in pending:
        kinds[flag.author_kind] = kinds.get(flag.author_kind, 0) + 1
    # "2 flagged by end users, 1 by an operator"
    phrases = [f"{count} {'flagged ' if i == 0 else ''}by "
               + (f"{_AUTHOR_PLURAL.get(kind, kind)}" if count != 1 else f"{_AUTHOR_ONE.get(kind, kind)}")
               for i, (kind, count) in enumerate(sorted(kinds.items(), key=lambda kv: -kv[1]))]
    return {
        "flags": pending, "ids": [f.public_id for f in pending], "note": note, "querystring": qs,
        "kinds": ", ".join(phrases),
        "captures": sum(1 for f in flags if f.is_capture),
        "not_pending": sum(1 for f in flags if f.status != FlagStatus.PENDING and not f.is_capture),
        "queue_url": _queue_url(request.application.slug, qs),
        "note_limit": NOTE_LIMIT,
    }


def _take_undo(request: HttpRequest) -> dict | None:
    """The last bulk reject's undo, shown once with the page that follows it."""
    key = SESSION_UNDO.format(slug=request.application.slug)
    undo = request.session.get(key)
    if not undo or undo.get("shown"):
        return None
    request.session[key] = {**undo, "shown": True}
    return undo


@member_required(Role.CURATOR)
@require_http_methods(["POST"])
def bulk_reopen(request: HttpRequest) -> HttpResponse:
    """Undo the last bulk reject: the same rows re-opened (those nobody changed since)."""
    application = request.application
    qs = _filter_querystring(request.GET)
    key = SESSION_UNDO.format(slug=application.slug)
    undo = request.session.get(key)
    if not undo or request.POST.get("batch") != undo.get("batch"):
        messages.error(request, "Nothing to undo: that bulk reject was undone already or replaced by a newer one.")
        return redirect(_queue_url(application.slug, qs))
    reopened, skipped = flag_bulk_reopen(application=application, reviewer=request.user,
                                         versions=undo["versions"])
    del request.session[key]
    if reopened:
        messages.success(request, f"Re-opened {len(reopened)} flag{'s' if len(reopened) != 1 else ''}.")
    if skipped:
        messages.warning(request, f"Left {len(skipped)} as they are (changed since the reject): "
                                  f"{', '.join(skipped[:10])}")
    return redirect(_queue_url(application.slug, qs))
