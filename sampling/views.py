"""Sampling screens: plans and the comparison card, a new plan with preview, a plan."""

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from consoles.access import member_required
from consoles.errors import DomainError, NotFound
from consoles.models import Role
from consoles.tables import table_configure
from consoles.text import count
from consoles.timestamps import on_screen

from .comparison import MIN_GOLD_LABELS
from .forms import CompareForm, PlanForm
from .models import SamplingPlan
from .selectors import (
    gold_labelled_count,
    plan_get,
    plan_list,
    plan_patterns_capped,
    plan_selections,
    sampling_comparison,
)
from .services import plan_create, plan_draft, plan_enqueue
from .tables import PlanTable

SELECTIONS_PER_PAGE = 100


def _plan_or_404(request: HttpRequest, pk: int) -> SamplingPlan:
    try:
        return plan_get(application=request.application, pk=pk)
    except NotFound as exc:
        raise Http404(exc.message) from exc


def _add_errors(form, exc: DomainError) -> None:
    placed = False
    for field, message in exc.fields.items():
        if field in form.fields:
            form.add_error(field, message)
            placed = True
    if not placed:
        form.add_error(None, exc.message)


@member_required()
def index(request: HttpRequest) -> HttpResponse:
    """The application's plans, newest first, and the "does it beat random?" card."""
    application = request.application
    table = PlanTable(plan_list(application=application), app_slug=application.slug)
    table_configure(request, table, per_page=25)
    context = {"table": table, **_comparison_context(request)}
    if request.htmx and request.htmx.target == "comparison":
        return render(request, "sampling/index.html#comparison", context)
    return render(request, "sampling/index.html", context)


def _comparison_context(request: HttpRequest) -> dict:
    """The card: the gate always (one count query); figures only when asked for."""
    application = request.application
    labelled = gold_labelled_count(application=application)
    form = CompareForm(request.GET if "seed" in request.GET else None)
    result = None
    if labelled >= MIN_GOLD_LABELS and form.is_bound and form.is_valid():
        try:
            result = sampling_comparison(application=application, **form.cleaned_data)
        except DomainError as exc:
            _add_errors(form, exc)
    return {
        "compare_form": form,
        "comparison": result,
        "labelled_count": labelled,
        "min_gold_labels": MIN_GOLD_LABELS,
    }


@member_required(Role.CURATOR)
def plan_new(request: HttpRequest) -> HttpResponse:
    """Budget and cap; "Preview" shows the plan without storing it, "Make plan" stores it."""
    application = request.application
    form = PlanForm(request.POST or None)
    draft = None
    if request.method == "POST" and form.is_valid():
        try:
            if "preview" in request.POST:
                draft = plan_draft(application=application, **form.cleaned_data)
            else:
                plan, created = plan_create(
                    application=application, actor=request.user, **form.cleaned_data
                )
                if created:
                    messages.success(request, f"Plan made: {count(plan.selected_count, 'case')} selected.")
                else:
                    maker = plan.created_by.get_username() if plan.created_by else "a command"
                    messages.info(
                        request,
                        f"An identical plan was made on {on_screen(plan.created_at)} by {maker}, and nothing "
                        "has changed since: here it is; nothing new was stored.",
                    )
                return redirect("sampling:plan", app_slug=application.slug, pk=plan.pk)
        except DomainError as exc:
            _add_errors(form, exc)
    context = {"form": form, "draft": draft}
    if request.htmx and request.htmx.target == "preview":
        # Only the preview is swapped: the form keeps its last errors, so the new ones are listed here.
        return render(request, "sampling/plan_new.html#preview", {**context, "swapped": True})
    return render(request, "sampling/plan_new.html", context)


@member_required()
def plan_detail(request: HttpRequest, pk: int) -> HttpResponse:
    plan = _plan_or_404(request, pk)
    page = Paginator(plan_selections(plan=plan), SELECTIONS_PER_PAGE).get_page(request.GET.get("page"))
    return render(
        request,
        "sampling/plan_detail.html",
        {
            "plan": plan,
            "page": page,
            "capped_patterns": list(plan_patterns_capped(plan=plan)[:50]),
            "can_enqueue": request.membership.has_role(Role.CURATOR),
        },
    )


@member_required()
def plan_json(request: HttpRequest, pk: int) -> HttpResponse:
    """The plan's canonical JSON, byte for byte as stored (its SHA-256 is the plan digest)."""
    plan = _plan_or_404(request, pk)
    response = HttpResponse(plan.canonical_json.encode(), content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="plan-{plan.plan_digest[:12]}.json"'
    return response


@require_POST
@member_required(Role.CURATOR)
def plan_enqueue_view(request: HttpRequest, pk: int) -> HttpResponse:
    plan = _plan_or_404(request, pk)
    result = plan_enqueue(plan=plan, actor=request.user)
    if result.repeated:
        messages.info(request, result.summary)
    else:
        messages.success(request, result.summary)
    return redirect("sampling:plan", app_slug=request.application.slug, pk=plan.pk)
