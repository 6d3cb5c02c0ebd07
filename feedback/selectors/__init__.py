"""Reads of the feedback app, one module per entity; each takes the application explicitly.

- `flags`: the queue (filters, keyset pages), one flag, its history, neighbours, counts;
- `bank`: the approved set as the exemplar bank reads it;
- `case_feedback`: feedback on cases;
- `exports`: the export stream, manifests and erasure records;
- `stats`: the overview's aggregates.

The queue pages by keyset on (created_at, id): a page costs an index range
scan of one page whatever the table size, and nothing counts the table.
Callers import from `feedback.selectors`.
"""


from .bank import (
    BANK_COLUMNS,
    approved_bank_rows,
    approved_count_outside,
    approved_set_marker,
    approved_set_marker_orm,
    approved_set_marker_sql,
    approved_set_marker_subqueries,
)
from .case_feedback import (
    case_feedback_list,
    case_refs_with_disagreement,
)
from .exports import (
    EXPORT_CHUNK_SIZE,
    erasure_record_list,
    export_manifest_list,
    export_manifest_previous,
    export_manifests_containing,
    flag_export_batches,
    flag_export_queryset,
    reviewed_items,
)
from .flags import (
    FLAG_KEYSETS,
    ORDERS,
    PAGE_SIZE,
    FlagFilters,
    FlagPage,
    flag_events,
    flag_get,
    flag_get_by_public_id,
    flag_last_correction,
    flag_list,
    flag_neighbours,
    flag_next_pending,
    flag_page,
    flag_reviews,
    flags_by_public_ids,
    pending_flag_count,
    unlabelled_capture_count,
)
from .snapshots import (
    SnapshotCheck,
    SnapshotRow,
    dataset_snapshot_batches,
    dataset_snapshot_check,
    dataset_snapshot_get,
    dataset_snapshot_list,
    snapshot_filters,
)
from .stats import (
    DecisionDelays,
    DelayQuantiles,
    capture_volume_by_day,
    flag_approvals_by_axis_verdict,
    flag_count_in_status,
    flag_decision_delays,
    flag_decisions_by_day,
    flag_transitions_by_day,
)

__all__ = [
    "PAGE_SIZE",
    "ORDERS",
    "FlagFilters",
    "FlagPage",
    "flag_list",
    "FLAG_KEYSETS",
    "flag_page",
    "flag_get",
    "flag_get_by_public_id",
    "flags_by_public_ids",
    "flag_events",
    "flag_last_correction",
    "flag_reviews",
    "flag_next_pending",
    "flag_neighbours",
    "pending_flag_count",
    "unlabelled_capture_count",
    "approved_set_marker_sql",
    "approved_set_marker",
    "approved_set_marker_orm",
    "approved_set_marker_subqueries",
    "BANK_COLUMNS",
    "approved_bank_rows",
    "approved_count_outside",
    "case_refs_with_disagreement",
    "case_feedback_list",
    "EXPORT_CHUNK_SIZE",
    "flag_export_queryset",
    "flag_export_batches",
    "reviewed_items",
    "export_manifest_previous",
    "export_manifest_list",
    "SnapshotCheck",
    "SnapshotRow",
    "dataset_snapshot_batches",
    "dataset_snapshot_check",
    "dataset_snapshot_get",
    "dataset_snapshot_list",
    "snapshot_filters",
    "export_manifests_containing",
    "erasure_record_list",
    "DelayQuantiles",
    "DecisionDelays",
    "flag_count_in_status",
    "flag_transitions_by_day",
    "flag_decisions_by_day",
    "flag_approvals_by_axis_verdict",
    "capture_volume_by_day",
    "flag_decision_delays",
]
