"""The bank screen: version, size per profile and axis, the last rebuild, a
"try it" form; settings and detector profiles for the application's admins.

Everything works without JavaScript (plain GET / POST forms); htmx only swaps
the try-it result in place.
"""

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from consoles.access import member_required
from consoles.errors import DomainError
from consoles.extensions import HomeCard
from consoles.models import Application, Role
from consoles.text import humanise

from . import selectors, services
from .forms import ProfileForm, SettingsForm, TryForm
from .models import DetectorProfile


def home_cards(application: Application) -> list[HomeCard]:
    bank_settings = selectors.bank_settings_get(application=application)
    state = f"enabled, τ {bank_settings.tau:g}" if bank_settings.enabled else "disabled: scores pass through"
    banks = selectors.profile_list(application=application).count()
    return [
        HomeCard(
            title="Exemplar bank",
            count=selectors.bank_size(application=application),
            caption=f"exemplars across {banks} detector bank{'s' if banks != 1 else ''} ({state})",
            url=reverse("exemplars:bank", args=[application.slug]),
        )
    ]


def _is_admin(request: HttpRequest) -> bool:
    return request.membership.has_role(Role.ADMIN)


def _profile_rows(application: Application, profiles: list[DetectorProfile]) -> list[dict]:
    builds = selectors.build_list(application=application)
    bank_settings = selectors.bank_settings_get(application=application)
    embedder_id = services.embedder().id
    rows = []
    for profile in profiles:
        build = builds.get(profile.pk)
        fingerprint = services.bank_fingerprint(
            profile=profile, bank_settings=bank_settings,
            embedder_id=services.embedder_id(profile) if services.is_external(profile) else embedder_id,
        )
        axes = []
        for axis in profile.axes:
            per_region = (build.stats.get(axis, {}) if build else {})
            axes.append({
                "axis": axis,
                "regions": [(region, per_region.get(region, {"danger": 0, "benign": 0, "twins": 0}))
                            for region in ("prompt", "answer")],
            })
        rows.append({
            "profile": profile,
            "build": build,
            "current": build is not None and build.fingerprint == fingerprint,
            "axes": axes,
            "form": ProfileForm(initial={"name": profile.name, "axes": profile.axes, "embedder": profile.embedder},
                                application=application,
                                prefix=f"p{profile.pk}"),
        })
    return rows


def _page(
    request: HttpRequest, *, status: int = 200, edited_profile_form: tuple[int, ProfileForm] | None = None,
    unconfirmed_delete: int | None = None, **overrides,
) -> HttpResponse:
    context = _context(request, edited_profile_form=edited_profile_form, unconfirmed_delete=unconfirmed_delete)
    context.update(overrides)
    return render(request, "exemplars/bank.html", context, status=status)


def _context(
    request: HttpRequest, *, edited_profile_form: tuple[int, ProfileForm] | None = None,
    unconfirmed_delete: int | None = None,
) -> dict:
    application = request.application
    profiles = list(selectors.profile_list(application=application))
    for profile in profiles:
        profile.application = application
    bank_settings = selectors.bank_settings_get(application=application)
    rows = _profile_rows(application, profiles)
    if edited_profile_form is not None:
        for row in rows:
            if row["profile"].pk == edited_profile_form[0]:
                row["form"], row["open"] = edited_profile_form[1], True
    for row in rows:
        if row["profile"].pk == unconfirmed_delete:
            row["delete_unconfirmed"], row["open"] = True, True
    context = {
        "bank_settings": bank_settings,
        "profiles": rows,
        "is_admin": _is_admin(request),
        "settings_form": SettingsForm(initial={"enabled": bank_settings.enabled, "tau": bank_settings.tau}),
        "profile_form": ProfileForm(application=application, prefix="new"),
        "try_form": TryForm(profiles=profiles, initial={"detector": profiles[0].name} if profiles else None),
        "result": None,
    }
    return context


@member_required()
@require_GET
def bank(request: HttpRequest) -> HttpResponse:
    return _page(request)


@member_required()
@require_GET
def try_it(request: HttpRequest) -> HttpResponse:
    """Text in, matches and adjusted scores out (uses the bank even while it is disabled)."""
    application = request.application
    profiles = list(selectors.profile_list(application=application))
    form = TryForm(request.GET, profiles=profiles)
    result = error = None
    if form.is_valid():
        data = form.cleaned_data
        profile = next(p for p in profiles if p.name == data["detector"])
        try:
            result = services.score(
                application=application, detector=profile.name, region=data["region"], text=data["text"],
                axis_energy={axis: (data["p_detector"], data["threshold"]) for axis in profile.axes},
                preview=True,
            )
        except DomainError as exc:
            error = exc.message
    if request.htmx:
        # A try builds the bank when the approved set moved: the profiles pane
        # (version, size, last rebuild) comes along, swapped out of band.
        context = {**_context(request), "try_form": form, "result": result, "error": error, "oob": True}
        return render(request, "exemplars/bank.html#tryit", context)
    return _page(request, try_form=form, result=result, error=error)


@member_required(Role.ADMIN)
@require_http_methods(["GET", "POST"])
def settings_update(request: HttpRequest) -> HttpResponse:
    if request.method == "GET":  # the form lives on the bank page
        return redirect("exemplars:bank", app_slug=request.application.slug)
    form = SettingsForm(request.POST)
    if not form.is_valid():
        return _page(request, status=400, settings_form=form)
    try:
        services.bank_settings_update(application=request.application, enabled=form.cleaned_data["enabled"],
                                      tau=form.cleaned_data["tau"], actor=request.user)
    except DomainError as exc:
        form.add_error(None, exc.message)
        return _page(request, status=400, settings_form=form)
    state = "enabled" if form.cleaned_data["enabled"] else "disabled"
    messages.success(request, f"Bank {state}, τ {form.cleaned_data['tau']:g}.")
    return redirect("exemplars:bank", app_slug=request.application.slug)


def _save_profile(request: HttpRequest, form: ProfileForm, profile: DetectorProfile | None) -> HttpResponse:
    if form.is_valid():
        try:
            saved = services.profile_save(application=request.application, name=form.cleaned_data["name"],
                                          axes=form.cleaned_data["axes"], profile=profile,
                                          embedder=form.cleaned_data["embedder"] or None)
        except DomainError as exc:
            exc.add_to_form(form)
        else:
            axes = ", ".join(humanise(axis) for axis in saved.axes)
            messages.success(request, f"Detector profile {saved.name} saved ({axes}).")
            return redirect("exemplars:bank", app_slug=request.application.slug)
    if profile is None:
        return _page(request, status=400, profile_form=form)
    return _page(request, status=400, edited_profile_form=(profile.pk, form))


def _profile_or_404(request: HttpRequest, pk: int) -> DetectorProfile:
    profile = selectors.profile_get_by_pk(application=request.application, pk=pk)
    if profile is None:
        raise Http404("No such detector profile.")
    return profile


@member_required(Role.ADMIN)
@require_http_methods(["GET", "POST"])
def profile_create(request: HttpRequest) -> HttpResponse:
    if request.method == "GET":
        return redirect("exemplars:bank", app_slug=request.application.slug)
    form = ProfileForm(request.POST, application=request.application, prefix="new")
    return _save_profile(request, form, None)


@member_required(Role.ADMIN)
@require_POST
def profile_update(request: HttpRequest, pk: int) -> HttpResponse:
    profile = _profile_or_404(request, pk)
    form = ProfileForm(request.POST, application=request.application, prefix=f"p{profile.pk}")
    return _save_profile(request, form, profile)


@member_required(Role.ADMIN)
@require_POST
def profile_delete(request: HttpRequest, pk: int) -> HttpResponse:
    profile = _profile_or_404(request, pk)
    if request.POST.get("confirm") != "yes":
        # The checkbox is required in the browser; a post without it deletes nothing.
        return _page(request, status=400, unconfirmed_delete=profile.pk)
    services.profile_delete(profile=profile)
    messages.success(request, f"Detector profile {profile.name} deleted with its bank.")
    return redirect("exemplars:bank", app_slug=request.application.slug)


@member_required(Role.ADMIN)
@require_POST
def profile_rebuild(request: HttpRequest, pk: int) -> HttpResponse:
    profile = _profile_or_404(request, pk)
    state = services.bank_rebuild(profile=profile)
    if state.built:
        messages.success(request, f"{profile.name}: built version {state.index.version[:12]} "
                                  f"({state.index.size} exemplars) in {state.seconds:.2f} s.")
    else:
        messages.info(request, f"{profile.name}: unchanged, version {state.index.version[:12]}.")
    return redirect("exemplars:bank", app_slug=request.application.slug)
