"""`GET /api/v1/flags/export`: the JSONL corpus, streamed.

A router of its own, mounted before the flag routes in `consoles/urls.py` so
that `/flags/export` is never read as a flag id.
"""

from collections.abc import Iterator
from datetime import date
from typing import Literal

from django.http import HttpRequest, StreamingHttpResponse
from django.utils import timezone
from ninja import Query, Router

from consoles.access import Principal
from consoles.api import ERRORS
from consoles.models import Application

from .api import (
    APPLICATION_QUERY,
    AUTHOR_KIND_QUERY,
    AXIS_QUERY,
    CREATED_FROM_QUERY,
    CREATED_TO_QUERY,
    PROBLEM_QUERY,
    REGION_QUERY,
    AuthorKindFilter,
    RegionFilter,
)
from .exports import CLASSIFIER, EXPORT_FORMATS, MEDIA_TYPE, ExportTally, jsonl_chunks
from .models import FlagStatus
from .selectors import FlagFilters, flag_export_batches
from .services import export_format_check, flags_download_record

router = Router(tags=["exports"])

# The schema lists the statuses an export takes: the flags' own and `any`.
ExportStatus = Literal["approved", "any", "pending", "rejected", "labelled", "dropped"]
assert set(ExportStatus.__args__) == {"any", *FlagStatus.values}  # noqa: S101 - import-time drift guard
EXPORT_STATUS_QUERY = Query("approved", description="Only this status; `any` exports every status.")
ExportFormat = Literal["classifier", "sft", "preference"]
assert set(ExportFormat.__args__) == set(EXPORT_FORMATS)  # noqa: S101 - import-time drift guard
EXPORT_FORMAT_QUERY = Query(
    "classifier",
    description="The lines' shape: `classifier` (the detector corpus), `sft` (chat examples from corrections) "
    "or `preference` (chosen/rejected pairs). See docs/training-data.md.",
)


def flags_export_response(
    *, application: Application, filters: FlagFilters, user=None, token=None, label: str,
    export_format: str = CLASSIFIER,
) -> StreamingHttpResponse:
    """Stream the export (validated filters) and record the download when it ends.

    Shared by the API and the queue's download button. Rows come from the
    database a batch at a time while the client reads: memory stays flat.
    """
    export_format = export_format_check(export_format)
    filters.validate(application)
    day = timezone.now().date().isoformat()
    status = filters.status or "all"
    response = StreamingHttpResponse(
        _stream(application=application, filters=filters, user=user, token=token, label=label,
                export_format=export_format),
        content_type=MEDIA_TYPE + "; charset=utf-8",
    )
    shape = "" if export_format == CLASSIFIER else f"-{export_format}"
    response["Content-Disposition"] = (
        f'attachment; filename="{application.slug}-flags-{status}{shape}-{day}.jsonl"'
    )
    response["Cache-Control"] = "no-store"
    response["X-Content-Type-Options"] = "nosniff"
    return response


def _stream(
    *, application: Application, filters: FlagFilters, user, token, label: str, export_format: str
) -> Iterator[bytes]:
    tally = ExportTally()
    watermark = timezone.now()
    try:
        yield from jsonl_chunks(flag_export_batches(application=application, filters=filters,
                                                    export_format=export_format, tally=tally), tally=tally)
    finally:
        # Also when the client went away midway: whatever was sent is a copy the
        # operator must be able to find after an erasure.
        if tally.rows:
            flags_download_record(
                application=application, filters=filters, tally=tally, watermark=watermark,
                principal_user=user, principal_token=token, label=label, export_format=export_format,
            )


@router.get(
    "/flags/export",
    summary="Export flags as JSONL (streamed)",
    description=(
        "Streams `application/x-ndjson`: one self-contained JSON object per line with exactly "
        "`id, region, axis, label, verdict, prompt, context, answer, problem, note, application_id, "
        "created_at, source` (`format=classifier`, the default); `format=sft` and `format=preference` "
        "stream training data for the assistant instead (docs/training-data.md). `label` is 1 for a `false_negative` verdict and 0 for `false_positive`. "
        "By default only approved flags with a resolved axis; `status=any` exports every status. "
        "`created_from`/`created_to` are inclusive days. Application tokens export their own "
        "application; a personal token or a session names it with `application_id`."
    ),
    response={200: None, **ERRORS},
    # The same int key as `response` above: a string "200" would sit beside it and
    # the schema would hold the key twice, which the docs page refuses to render.
    openapi_extra={
        "responses": {200: {"description": "JSONL lines", "content": {MEDIA_TYPE: {"schema": {"type": "string"}}}}}
    },
)
def flags_export(
    request: HttpRequest,
    application_id: str | None = APPLICATION_QUERY,
    status: ExportStatus = EXPORT_STATUS_QUERY,
    axis: str = AXIS_QUERY,
    region: RegionFilter = REGION_QUERY,
    problem: str = PROBLEM_QUERY,
    author_kind: AuthorKindFilter = AUTHOR_KIND_QUERY,
    created_from: date | None = CREATED_FROM_QUERY,
    created_to: date | None = CREATED_TO_QUERY,
    format: ExportFormat = EXPORT_FORMAT_QUERY,
):
    principal: Principal = request.auth
    application = principal.application_for(application_id)
    filters = FlagFilters(
        status="" if status == "any" else status,
        axis=axis,
        region=region,
        problem=problem,
        author_kind=author_kind,
        created_from=created_from,
        created_to=created_to,
    )
    return flags_export_response(
        application=application,
        filters=filters,
        user=principal.user,
        token=principal.token if principal.kind == "application" else None,
        label=f"{principal.kind}:{principal.label.split(':', 1)[1]}",
        export_format=format,
    )
