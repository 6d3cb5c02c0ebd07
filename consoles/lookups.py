"""Filters written so that PostgreSQL's planner can read the column's statistics.

Django's `icontains` is `UPPER(column::text) LIKE UPPER(pattern)` on PostgreSQL:
an expression nothing is collected on, so the planner guesses that a fraction
of a percent of the rows match. For a list ordered by an index and cut at one
page that guess picks a scan of the whole table and a sort (about 100 ms at
200,000 rows) even when every other row matches, where walking the index would
stop after a hundred rows. Written against the bare column (`ILIKE`, and JSON
containment for list membership), the planner estimates from the column's most
common values and histogram and walks the index when matches are common.

Both are lookup expressions, used directly in `filter()`:

    qs.filter(ILike(F("claim_text"), "disk") | ILike(F("case_id"), "disk"))
    qs.filter(HasString(F("mined_by"), "sensor_disagreement"))
"""

import json

from django.db.models import Lookup
from django.db.models.lookups import IContains


class ILike(IContains):
    """`icontains` (case-insensitive substring, `%` and `_` taken literally); on
    PostgreSQL written as `column ILIKE pattern`."""

    def as_postgresql(self, compiler, connection):
        # Lookup's process_lhs, not BuiltinLookup's: that one wraps the column in
        # the UPPER(...::text) this lookup exists to leave out.
        lhs, lhs_params = Lookup.process_lhs(self, compiler, connection)
        rhs, rhs_params = self.process_rhs(compiler, connection)
        return f"{lhs} ILIKE {rhs}", (*lhs_params, *rhs_params)


class HasString(Lookup):
    """A JSON list column holds this string as one of its items (exact match).

    PostgreSQL: `column @> '["item"]'` (containment; estimated from the column's
    statistics). Elsewhere (SQLite stores JSON as text): the item's JSON text,
    quotes included, occurs in the column's text; the quotes keep `"ab"` from
    matching inside `"xaby"`, and the same encoder as the stored value writes it.
    """

    lookup_name = "has_string"
    prepare_rhs = False

    def __init__(self, lhs, rhs) -> None:
        if not isinstance(rhs, str):
            raise TypeError(f"HasString needs a string, not {type(rhs).__name__}.")
        super().__init__(lhs, rhs)

    def as_sql(self, compiler, connection):
        lhs, lhs_params = self.process_lhs(compiler, connection)
        return f"instr({lhs}, %s) > 0", (*lhs_params, json.dumps(self.rhs))

    def as_postgresql(self, compiler, connection):
        lhs, lhs_params = self.process_lhs(compiler, connection)
        return f"{lhs} @> %s::jsonb", (*lhs_params, json.dumps([self.rhs]))
