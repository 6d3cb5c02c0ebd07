"""Writes of the feedback app, one module per entity. Each service is keyword-only,
runs in one transaction, validates before writing and appends its FlagEvent (and,
for a human decision, its FlagReview) in that same transaction.

- `flags`: a flag or capture submitted, one or a batch, written whole with its event;
- `captures`: the capacity bound on an application's pending captures;
- `review`: a curator's decision, bulk reject and reopen, claims;
- `events`: who acts (Actor), the text limits, the history row of a transition;
- `case_feedback`: an operator's or agent's disposition on a case;
- `exports`: export files and downloads, each with its manifest;
- `erasure`: a subject's erasure and the retention purge.

Callers import from `feedback.services`; the modules are where a behaviour lives.
"""


from .case_feedback import (
    MAX_NOTE,
    case_feedback_submit,
)
from .erasure import (
    PURGE_BATCH,
    ErasureHook,
    PurgeReport,
    _erasure_hooks,
    flags_purge_expired,
    register_erasure_hook,
    subject_digest,
    subject_erase,
)
from .events import (
    CLAIM_DURATION,
    MAX_ID,
    MAX_TEXT,
    NOTE_LIMIT,
    Actor,
)
from .exports import (
    SINCE_LAST_OVERLAP,
    _export_manifest_create,
    dataset_snapshot_create,
    drafts_export,
    export_filters_dict,
    export_filters_key,
    export_format_check,
    export_manifest_document,
    flags_download_record,
    flags_export_file,
    snapshot_name_check,
)
from .flags import (
    BATCH_CREATED,
    BATCH_EXISTING,
    MAX_BATCH,
    BatchItem,
    FlagSubmission,
    flag_prepare,
    flag_public_id,
    flag_submit,
    flags_submit_batch,
)
from .review import (
    flag_as_dict,
    flag_bulk_reject,
    flag_bulk_reopen,
    flag_claim,
    flag_release,
    flag_review,
)

__all__ = [
    "CLAIM_DURATION",
    "MAX_TEXT",
    "NOTE_LIMIT",
    "MAX_ID",
    "Actor",
    "FlagSubmission",
    "flag_public_id",
    "flag_prepare",
    "flag_submit",
    "BATCH_CREATED",
    "BATCH_EXISTING",
    "MAX_BATCH",
    "BatchItem",
    "flags_submit_batch",
    "flag_as_dict",
    "flag_review",
    "flag_bulk_reject",
    "flag_bulk_reopen",
    "flag_claim",
    "flag_release",
    "MAX_NOTE",
    "case_feedback_submit",
    "SINCE_LAST_OVERLAP",
    "export_filters_dict",
    "export_filters_key",
    "export_format_check",
    "dataset_snapshot_create",
    "snapshot_name_check",
    "export_manifest_document",
    "_export_manifest_create",
    "flags_export_file",
    "flags_download_record",
    "drafts_export",
    "PURGE_BATCH",
    "ErasureHook",
    "_erasure_hooks",
    "register_erasure_hook",
    "subject_digest",
    "subject_erase",
    "PurgeReport",
    "flags_purge_expired",
]
