"""The training-data screen: download each format, record a dataset snapshot
(admins), list the snapshots with what changed between them, and download one
again, byte for byte or with a plain account of what erasure or purge removed."""

from collections.abc import Iterator

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_http_methods

from consoles.access import member_required
from consoles.errors import InvalidInput, NotFound
from consoles.models import Role

from .exports import EXPORT_FORMATS, MEDIA_TYPE, ExportTally, jsonl_chunks
from .models import FlagStatus
from .selectors import (
    FlagFilters,
    dataset_snapshot_batches,
    dataset_snapshot_check,
    dataset_snapshot_get,
    dataset_snapshot_list,
    snapshot_filters,
)
from .services import dataset_snapshot_create, flags_download_record

FORMAT_WORDS = {"classifier": "Classifier lines (the detector corpus)", "sft": "SFT chat examples (corrections)",
                "preference": "Preference pairs (chosen / rejected)"}


@member_required()
@require_http_methods(["GET", "HEAD", "POST"])
def snapshots(request: HttpRequest) -> HttpResponse:
    application = request.application
    is_admin = request.membership.has_role(Role.ADMIN)
    errors: dict[str, str] = {}
    values = {"name": "", "format": "sft"}
    if request.method == "POST":
        if not is_admin:
            raise PermissionDenied("Recording a snapshot needs the admin role.")
        values = {"name": request.POST.get("name", ""), "format": request.POST.get("format", "")}
        try:
            snapshot = dataset_snapshot_create(
                application=application, name=values["name"], export_format=values["format"],
                filters=FlagFilters(status=FlagStatus.APPROVED), created_by=request.user,
            )
        except InvalidInput as exc:
            errors = dict(exc.fields) or {"__all__": exc.message}
        else:
            messages.success(request, f"Recorded snapshot {snapshot.name!r}: {snapshot.row_count} lines, "
                                      f"sha256 {snapshot.sha256[:12]}….")
            return redirect(reverse("feedback:snapshots", args=[application.slug]))
    context = {
        "rows": dataset_snapshot_list(application=application),
        "formats": [(value, FORMAT_WORDS[value]) for value in EXPORT_FORMATS],
        "is_admin": is_admin,
        "errors": errors,
        "form_error": errors.get("__all__", ""),
        "values": values,
    }
    return render(request, "feedback/snapshots.html", context, status=422 if errors else 200)


@member_required()
@require_http_methods(["GET", "HEAD"])
def snapshot_download(request: HttpRequest, name: str) -> HttpResponse:
    """The snapshot's file again: byte for byte when the current data still gives
    it; otherwise a page saying what changed since (and nothing is sent)."""
    application = request.application
    try:
        snapshot = dataset_snapshot_get(application=application, name=name)
    except NotFound:
        raise Http404("No such snapshot.") from None
    check = dataset_snapshot_check(snapshot=snapshot)
    if not check.intact:
        return render(request, "feedback/snapshot_changed.html", {"check": check, "snapshot": snapshot},
                      status=409)
    response = StreamingHttpResponse(_stream(request, snapshot), content_type=MEDIA_TYPE + "; charset=utf-8")
    response["Content-Disposition"] = (
        f'attachment; filename="{application.slug}-snapshot-{snapshot.pk}-{snapshot.export_format}.jsonl"'
    )
    response["Cache-Control"] = "no-store"
    response["X-Content-Type-Options"] = "nosniff"
    return response


def _stream(request: HttpRequest, snapshot) -> Iterator[bytes]:
    tally = ExportTally()
    watermark = timezone.now()
    try:
        yield from jsonl_chunks(dataset_snapshot_batches(snapshot=snapshot, tally=tally), tally=tally)
    finally:
        if tally.rows:  # a copy someone now holds: erasure must find it
            flags_download_record(
                application=snapshot.application, filters=snapshot_filters(snapshot), tally=tally,
                watermark=watermark, principal_user=request.user, principal_token=None,
                label=f"snapshot {snapshot.name}:{request.user.get_username()}",
                export_format=snapshot.export_format,
            )
