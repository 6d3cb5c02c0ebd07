"""Free-text search over a flag's prompt, answer and note, served by an index.

What a search means (the same on both databases): the query's words (runs of
letters and digits; anything else separates them, so quotes, `*`, `-`, `:` and
other query syntax are never interpreted) must each begin a word of the
prompt, the answer or the note, in any case. A word of one or two characters
must be a whole word (a prefix that short would match most of the table). So
`refus` finds "refused", `lyon 7am` finds "The Lyon store opens at 7am".

Where the index lives:

- SQLite: `feedback_flag_fts`, an external-content FTS5 table over the flag
  table (it stores only the index, not the text), kept in step by three
  triggers on `feedback_flag` (insert, delete, and an update of the three
  columns). Every write path (the services, the batch insert, erasure, the
  retention purge, a dropped capture, a cascade from a deleted application)
  therefore keeps it exact, in the writer's own transaction.
- PostgreSQL: a GIN index on `to_tsvector('simple', prompt || ' ' || answer ||
  ' ' || note)`, which PostgreSQL maintains itself. `simple` lower-cases and
  does not stem, like FTS5's `unicode61` tokenizer.

The filter is one expression (`FlagTextMatch`) that a queryset takes in
`filter()`; on SQLite it is `id IN (<the matching ids>)`, read from
`feedback_flag_fts MATCH %s` first (or, for a word thousands of flags hold,
`+id IN (SELECT rowid ... MATCH %s)`: see `FlagTextMatch`), on PostgreSQL `id = ANY(ARRAY(SELECT id FROM feedback_flag
WHERE to_tsvector(...) @@ to_tsquery(...)))`, the document written exactly
as the index's expression so the planner uses it. User input
only ever reaches the database as a bound parameter, built from its words.

Django's SQLite schema editor rebuilds a table to alter a column (a new table,
copy, drop, rename), which drops the table's triggers: `ensure_sqlite_index`
runs after every `migrate` (post_migrate) and puts back what is missing,
re-indexing from the table if the triggers had gone.
"""

# Every name put into SQL here is a module constant; user input is a bound parameter.
# ruff: noqa: S608

import re

from django.db import connections
from django.db.models import F, Lookup

FLAG_TABLE = "feedback_flag"
FTS_TABLE = "feedback_flag_fts"
PG_INDEX = "fb_flag_text_search"
COLUMNS = ("prompt", "answer", "note")
MAX_QUERY_LENGTH = 200
MAX_TERMS = 8
MIN_PREFIX = 3
# From this many matching flags, SQLite walks the page's index rather than reading every match.
COMMON_MATCHES = 5000

# Letters and digits; `_` separates, as it does for both tokenizers.
_WORD = re.compile(r"[^\W_]+")


class SearchTooVague(ValueError):
    """The query has no word to look for."""


def search_terms(query: str) -> list[str]:
    """The query's words, lower-cased, deduplicated, in order (at most MAX_TERMS)."""
    seen: list[str] = []
    for word in _WORD.findall(query.lower()):
        if word not in seen:
            seen.append(word)
    return seen[:MAX_TERMS]


def fts5_query(terms: list[str]) -> str:
    """An FTS5 MATCH string: every term quoted (so no word is an operator), a
    prefix query from MIN_PREFIX characters, all of them required."""
    return " ".join(f'"{t}"*' if len(t) >= MIN_PREFIX else f'"{t}"' for t in terms)


def tsquery(terms: list[str]) -> str:
    """A `to_tsquery` string: the terms are letters and digits only, so nothing
    in them is tsquery syntax."""
    return " & ".join(f"{t}:*" if len(t) >= MIN_PREFIX else t for t in terms)


def _pg_document(columns: list[str]) -> str:
    return "to_tsvector('simple'::regconfig, (" + " || ' ' || ".join(columns) + "))"


def few_matching_ids(match: str, connection) -> list[int] | None:
    """The ids of the flags (of any tenant) that match the FTS5 query, or None when
    there are COMMON_MATCHES or more."""
    table = connection.ops.quote_name(FTS_TABLE)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT rowid FROM {table} WHERE {table} MATCH %s LIMIT %s", [match, COMMON_MATCHES])
        ids = [row[0] for row in cursor.fetchall()]
    return None if len(ids) >= COMMON_MATCHES else ids


class FlagTextMatch(Lookup):
    """True for a flag whose prompt, answer or note holds every term; used as
    `Flag.objects.filter(FlagTextMatch(terms))`.

    A lookup on the flag's id, not a plain boolean expression: the ORM puts a lookup
    into WHERE as it is, while a boolean expression on SQLite (no native boolean type)
    becomes `(id IN (...)) = 1`, which hid the id constraint from the planner. It then
    walked the application's whole (application, created_at) index, checking each id
    against the matches: 130-200 ms at a million flags for a word a single flag holds.
    Written `id IN (...)`, SQLite looks up the few matching rows by rowid and sorts them.

    That is the right plan for a word few flags hold, and the wrong one for a word many
    hold (every match read and sorted for a page of 50: 200-370 ms for 100,000). And
    which plan SQLite picks rests on its statistics (`ANALYZE`), which a database that
    was never analysed lacks: it then walks the index whatever the word. So on SQLite
    the matching ids are read first, up to COMMON_MATCHES of them (the FTS index alone:
    under a millisecond for a thousand), and the filter is decided by what was found:
    - fewer: `id IN (<those ids>)`, a list of integers the planner reads by rowid and
      then sorts (4 ms for 1,000 matches at a million flags; without statistics it does
      so for a handful of ids, and may walk the index for more, as it did before);
    - that many or more: `+id IN (SELECT rowid ... MATCH ...)`; SQLite cannot look rows
      up by `+id`, so it walks the page's own index in order and stops at the page's
      end, a few rows in for a word that many flags hold.
    The ids are read in the same statement's connection just before it runs; a flag
    written in between is in the next search, as it would be had it come a moment later.
    """

    lookup_name = "text_matches"
    prepare_rhs = False
    can_use_none_as_rhs = False

    def __init__(self, terms: list[str]) -> None:
        if not terms:
            raise SearchTooVague("Nothing to search for.")
        super().__init__(F("id"), tuple(terms))

    @property
    def terms(self) -> list[str]:
        return list(self.rhs)

    def __repr__(self) -> str:
        return f"FlagTextMatch({self.terms!r})"

    def _pk(self, compiler, connection) -> str:
        sql, params = compiler.compile(self.lhs)
        assert not params  # a plain column
        return sql

    def as_sql(self, compiler, connection):
        pk = self._pk(compiler, connection)
        table = connection.ops.quote_name(FTS_TABLE)
        match = fts5_query(self.terms)
        ids = few_matching_ids(match, connection)
        if ids is None:
            return f"+{pk} IN (SELECT rowid FROM {table} WHERE {table} MATCH %s)", (match,)
        # Integers the database gave (no user input): written inline, so no list is too long for bound parameters.
        return f"{pk} IN ({', '.join(str(int(i)) for i in ids)})", ()

    def as_postgresql(self, compiler, connection):
        # The matching ids first (the GIN index: a bitmap scan, run once as an
        # init plan), then the page from them by primary key, as SQLite does.
        # Written as a plain filter or an IN subquery, the planner, which puts a
        # prefix term at 2% of the rows whatever it holds, walked the page's
        # index re-parsing every flag's text (2.3 s p95 at a million flags for a
        # word 1 flag in 1,000 holds) or hashed the matches and read the whole
        # application's index (0.2 s at 300,000). With `= ANY(ARRAY(...))` a rare
        # word costs its matches: 20 ms at 300,000. A word thousands of flags hold
        # costs as many key lookups (about 0.6 s for 30,000 on this machine).
        pk = self._pk(compiler, connection)
        document = _pg_document([f"search.{c}" for c in COLUMNS])
        table = connection.ops.quote_name(FLAG_TABLE)
        return (f"{pk} = ANY(ARRAY(SELECT search.id FROM {table} search WHERE {document} @@ "
                "to_tsquery('simple'::regconfig, %s)))", (tsquery(self.terms),))


# --- The index itself (migrations and post_migrate) ---------------------------------

_TRIGGERS = {
    "feedback_flag_fts_insert": (
        "AFTER INSERT ON feedback_flag BEGIN "
        f"INSERT INTO {FTS_TABLE}(rowid, prompt, answer, note) VALUES (new.id, new.prompt, new.answer, new.note); "
        "END"
    ),
    "feedback_flag_fts_delete": (
        "AFTER DELETE ON feedback_flag BEGIN "
        f"INSERT INTO {FTS_TABLE}({FTS_TABLE}, rowid, prompt, answer, note) "
        "VALUES ('delete', old.id, old.prompt, old.answer, old.note); "
        "END"
    ),
    # Only when the text changed: a review's update of the status costs nothing here.
    "feedback_flag_fts_update": (
        "AFTER UPDATE OF prompt, answer, note ON feedback_flag "
        "WHEN old.prompt IS NOT new.prompt OR old.answer IS NOT new.answer OR old.note IS NOT new.note BEGIN "
        f"INSERT INTO {FTS_TABLE}({FTS_TABLE}, rowid, prompt, answer, note) "
        "VALUES ('delete', old.id, old.prompt, old.answer, old.note); "
        f"INSERT INTO {FTS_TABLE}(rowid, prompt, answer, note) VALUES (new.id, new.prompt, new.answer, new.note); "
        "END"
    ),
}


def ensure_sqlite_index(using: str = "default") -> bool:
    """Create the FTS5 table and its triggers where missing; re-index from the
    flag table when anything was missing. Returns whether it changed anything."""
    connection = connections[using]
    if connection.vendor != "sqlite":
        return False
    with connection.cursor() as cursor:
        cursor.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'feedback_flag'")
        if cursor.fetchone() is None:
            return False  # not migrated this far
        cursor.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'trigger') AND name LIKE %s",
                       [f"{FTS_TABLE}%"])
        present = {row[0] for row in cursor.fetchall()}
        missing = [name for name in (FTS_TABLE, *_TRIGGERS) if name not in present]
        if not missing:
            return False
        if FTS_TABLE not in present:
            cursor.execute(
                f"CREATE VIRTUAL TABLE {FTS_TABLE} USING fts5(prompt, answer, note, content='feedback_flag', "
                "content_rowid='id', tokenize='unicode61 remove_diacritics 2')"
            )
        for name, body in _TRIGGERS.items():
            if name not in present:
                cursor.execute(f"CREATE TRIGGER {name} {body}")
        # Whatever was written while a trigger was missing is indexed now.
        cursor.execute(f"INSERT INTO {FTS_TABLE}({FTS_TABLE}) VALUES ('rebuild')")
    return True


def drop_sqlite_index(using: str = "default") -> None:
    connection = connections[using]
    with connection.cursor() as cursor:
        for name in _TRIGGERS:
            cursor.execute(f"DROP TRIGGER IF EXISTS {name}")
        cursor.execute(f"DROP TABLE IF EXISTS {FTS_TABLE}")


def create_pg_index_sql(concurrently: bool = True) -> str:
    how = "CONCURRENTLY " if concurrently else ""
    return f"CREATE INDEX {how}{PG_INDEX} ON feedback_flag USING gin ({_pg_document(list(COLUMNS))})"
