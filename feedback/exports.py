"""The JSONL training corpus (the slow loop of seed 001) and how export files are written.

Pure Python, no ORM: the exact line format, the streaming encoder, the atomic
file write and the manifest are tested without a database. The selectors feed
`jsonl_chunks` with plain tuples (`EXPORT_COLUMNS`), straight from a database
cursor, so memory stays flat in the number of rows.

One line per flag, self-contained, exactly these keys in this order::

    {"id":"fb_9c1f2a7b4e0d6a18","region":"prompt","axis":"jailbreak","label":1,
     "verdict":"false_negative","prompt":"...","context":"","answer":"",
     "problem":"jailbreak_attempt","note":"...","application_id":"acme",
     "created_at":"2026-06-26T10:14:33+00:00","source":"human_feedback"}

Hugging Face `datasets.load_dataset("json", data_files=...)` and
`pandas.read_json(path, lines=True)` load it as is: UTF-8, one JSON object
per line, "\\n" line ends, the same keys and types on every line.

That is the `classifier` format (the default). Two more formats turn the same
approved flags into training data for the assistant itself (issue 34):

- `sft`: one chat example per flag with a curator's correction,
  ``{"messages":[{"role":"system","content":context} (only with a context),
  {"role":"user","content":prompt},{"role":"assistant","content":correction}],
  "id","axis","application_id"}`` (the shape of TRL's SFTTrainer and most
  chat fine-tuning APIs);
- `preference`: ``{"prompt","chosen","rejected","id","axis"}``, `rejected` the
  flagged answer, `chosen` the correction or else the benign twin's answer
  (the shape of TRL's DPOTrainer).

A flag that has nothing to train on in a format (no correction; no correction
and no twin answer) is left out of it, and counted (`ExportTally.left_out`).
"""

from __future__ import annotations

import hashlib
import zlib
from array import array
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np
import orjson

EXPORT_FIELDS: tuple[str, ...] = (
    "id",
    "region",
    "axis",
    "label",
    "verdict",
    "prompt",
    "context",
    "answer",
    "problem",
    "note",
    "application_id",
    "created_at",
    "source",
)

# What a selector yields per flag, in this order (a values_list over Flag).
EXPORT_COLUMNS: tuple[str, ...] = (
    "pk",
    "public_id",
    "version",
    "region",
    "axis",
    "verdict",
    "prompt",
    "context",
    "answer",
    "problem",
    "note",
    "created_at",
    "author_kind",
)

# What the `sft` and `preference` formats read per flag, in this order.
TRAINING_COLUMNS: tuple[str, ...] = (
    "pk",
    "public_id",
    "version",
    "axis",
    "prompt",
    "context",
    "answer",
    "correction",
    "twin_answer",
)

CLASSIFIER = "classifier"
SFT = "sft"
PREFERENCE = "preference"
EXPORT_FORMATS: tuple[str, ...] = (CLASSIFIER, SFT, PREFERENCE)

# Each format's keys, in line order (the manifest lists them).
FORMAT_FIELDS: dict[str, tuple[str, ...]] = {
    CLASSIFIER: EXPORT_FIELDS,
    SFT: ("messages", "id", "axis", "application_id"),
    PREFERENCE: ("prompt", "chosen", "rejected", "id", "axis"),
}

# A miss (false_negative) is a positive training example, an over-flag a negative one.
LABEL_BY_VERDICT: dict[str, int] = {"false_negative": 1, "false_positive": 0}

# A flag raised by a person (an end user through the integration, or an operator)
# is human feedback; the runtime's own captured answers are marked as such so a
# training pipeline can weigh or drop them.
SOURCE_BY_AUTHOR_KIND: dict[str, str] = {
    "end_user": "human_feedback",
    "operator": "human_feedback",
    "agent": "automated_capture",
}

MEDIA_TYPE = "application/x-ndjson"

# orjson writes compact separators and raw UTF-8 (the smallest valid JSON, one
# object per line), the same bytes as `json.dumps(..., ensure_ascii=False,
# separators=(",", ":"))` (a test holds them identical), several times faster.
_OMIT_MICROSECONDS = orjson.OPT_OMIT_MICROSECONDS


def _encode(record: dict[str, Any]) -> bytes:
    # A UTC datetime is written by orjson itself, "2026-06-26T10:14:33+00:00"
    # (microseconds cut, not rounded): the shape of `iso_utc`, without its cost per row.
    return orjson.dumps(record, option=_OMIT_MICROSECONDS)


def export_record(row: tuple, *, application_id: str) -> dict[str, Any]:
    """The exported object for one flag row (columns in `EXPORT_COLUMNS` order)."""
    (
        _pk,
        public_id,
        _version,
        region,
        axis,
        verdict,
        prompt,
        context,
        answer,
        problem,
        note,
        created_at,
        author_kind,
    ) = row
    return {
        "id": public_id,
        "region": region,
        "axis": axis or None,
        "label": LABEL_BY_VERDICT.get(verdict) if verdict else None,
        "verdict": verdict or None,
        "prompt": prompt or "",
        "context": context or "",
        "answer": answer or "",
        "problem": problem,
        "note": note or "",
        "application_id": application_id,
        "created_at": created_at if getattr(created_at, "tzinfo", None) is UTC else _as_utc(created_at),
        "source": SOURCE_BY_AUTHOR_KIND.get(author_kind, "human_feedback"),
    }


def sft_record(row: tuple, *, application_id: str) -> dict[str, Any] | None:
    """The chat example of one flag row (`TRAINING_COLUMNS`), or None without a correction."""
    _pk, public_id, _version, axis, prompt, context, _answer, correction, _twin_answer = row
    if not correction:
        return None
    messages = [{"role": "system", "content": context}] if context else []
    messages.append({"role": "user", "content": prompt or ""})
    messages.append({"role": "assistant", "content": correction})
    return {"messages": messages, "id": public_id, "axis": axis or None, "application_id": application_id}


def preference_record(row: tuple, *, application_id: str) -> dict[str, Any] | None:
    """The preference pair of one flag row (`TRAINING_COLUMNS`): the flagged answer
    rejected, the correction (else the benign twin's answer) chosen; None with neither."""
    _pk, public_id, _version, axis, prompt, _context, answer, correction, twin_answer = row
    chosen = correction or twin_answer
    if not chosen:
        return None
    return {"prompt": prompt or "", "chosen": chosen, "rejected": answer or "", "id": public_id,
            "axis": axis or None}


# Each format: the columns a selector reads, and the record of one row (None: left out).
FORMAT_RECORDS: dict[str, tuple[tuple[str, ...], Callable[..., dict[str, Any] | None]]] = {
    CLASSIFIER: (EXPORT_COLUMNS, export_record),
    SFT: (TRAINING_COLUMNS, sft_record),
    PREFERENCE: (TRAINING_COLUMNS, preference_record),
}


def _as_utc(moment: datetime | None) -> datetime | None:
    """The moment in UTC (`iso_utc`'s rule: a naive value is UTC read back without tzinfo)."""
    if moment is None:
        return None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def export_line(row: tuple, *, application_id: str) -> str:
    """One JSONL line (with its trailing newline)."""
    return encode_row(row, application_id=application_id) + "\n"


def encode_row(row: tuple, *, application_id: str) -> str:
    """The line's JSON text (no newline)."""
    return _encode(export_record(row, application_id=application_id)).decode()


@dataclass
class ExportTally:
    """What a finished export contained, accumulated while streaming.

    `flag_pks` keeps only 8 bytes per row (an `array`), so a million-row export
    can still record exactly which flags it held, which is what erasure needs to
    find the files an erased subject appears in.
    """

    rows: int = 0
    bytes: int = 0
    # Flags the format had nothing to train on (no correction, no twin): not in the file.
    left_out: int = 0
    flag_pks: array = field(default_factory=lambda: array("q"))
    _sha256: Any = field(default_factory=hashlib.sha256)
    _corpus: Any = field(default_factory=hashlib.sha256)
    finished: bool = False

    @property
    def sha256(self) -> str:
        return self._sha256.hexdigest()

    @property
    def corpus_version(self) -> str:
        """Names the exact reviewed rows (flag id and review version) in this export:
        two exports with the same corpus version hold the same reviewed flags."""
        return "cv_" + self._corpus.hexdigest()[:16]


def jsonl_chunks(
    batches: Iterable[list[tuple[int, str, int, str | bytes]]],
    *,
    tally: ExportTally | None = None,
    on_rows: Callable[[int], None] | None = None,
) -> Iterator[bytes]:
    """JSONL bytes, one chunk per batch of rows.

    Each batch holds `(pk, public_id, version, json_text)` rows (see
    `feedback.selectors.flag_export_batches`); `json_text` is str or, when the
    database hands it over undecoded, UTF-8 bytes. Lazy: a batch is fetched
    only when the consumer asks for more, so a streaming response or a file
    write holds one batch at a time. Work is per batch, not per row: at a
    million rows the Python overhead per row is what decides the speed.
    """
    tally = tally if tally is not None else ExportTally()
    for batch in batches:
        if not batch:
            continue
        texts = [row[3] for row in batch]
        if isinstance(texts[0], bytes | bytearray | memoryview):
            data = b"\n".join(texts) + b"\n"
        else:
            data = ("\n".join(texts) + "\n").encode()
        tally.flag_pks.extend([row[0] for row in batch])
        tally._corpus.update("".join([f"{row[1]}:{row[2]}\n" for row in batch]).encode())
        tally.rows += len(batch)
        tally.bytes += len(data)
        tally._sha256.update(data)
        if on_rows is not None:
            on_rows(len(batch))
        yield data
    tally.finished = True


def encoded_batches(
    rows: Iterable[tuple],
    *,
    application_id: str,
    batch_size: int = 1000,
    export_format: str = CLASSIFIER,
    tally: ExportTally | None = None,
) -> Iterator[list[tuple[int, str, int, bytes]]]:
    """Column tuples (the format's columns, `FORMAT_RECORDS`) to what `jsonl_chunks`
    takes: UTF-8 lines. Rows the format leaves out are counted in `tally.left_out`."""
    if export_format == CLASSIFIER:  # every row is a line: the loop stays as lean as it was
        batch: list[tuple[int, str, int, bytes]] = []
        for row in rows:
            batch.append((row[0], row[1], row[2], _encode(export_record(row, application_id=application_id))))
            if len(batch) >= batch_size:
                yield batch
                batch = []
        if batch:
            yield batch
        return
    _columns, make = FORMAT_RECORDS[export_format]
    batch = []
    left_out = 0
    for row in rows:
        record = make(row, application_id=application_id)
        if record is None:
            left_out += 1
            continue
        batch.append((row[0], row[1], row[2], _encode(record)))
        if len(batch) >= batch_size:
            if tally is not None:
                tally.left_out += left_out
            left_out = 0
            yield batch
            batch = []
    if tally is not None:
        tally.left_out += left_out
    if batch:
        yield batch


def line_hash(line: bytes) -> str:
    """One line's hash in a snapshot's entries (its JSON text, without the newline)."""
    return hashlib.sha256(line).hexdigest()[:16]


def recording_entries(
    batches: Iterable[list[tuple[int, str, int, bytes]]], entries: list[list[str]]
) -> Iterator[list[tuple[int, str, int, bytes]]]:
    """Pass batches through unchanged, appending `[public_id, line_hash]` per line
    to `entries` (a snapshot's record of what it holds, in file order)."""
    for batch in batches:
        entries.extend([[row[1], line_hash(row[3])] for row in batch])
        yield batch


@dataclass(frozen=True)
class EntriesDiff:
    """How one snapshot's lines differ from another's, by flag id (sorted)."""

    added: list[str]
    removed: list[str]
    changed: list[str]  # in both, with another line


def entries_diff(before: Iterable[list[str]], after: Iterable[list[str]]) -> EntriesDiff:
    old = {public_id: digest for public_id, digest in before}
    new = {public_id: digest for public_id, digest in after}
    return EntriesDiff(
        added=sorted(new.keys() - old.keys()),
        removed=sorted(old.keys() - new.keys()),
        changed=sorted(pid for pid in new.keys() & old.keys() if new[pid] != old[pid]),
    )


# --- Which flags an export held ----------------------------------------------
#
# Sorted primary keys, delta-encoded and zlib-compressed: consecutive keys
# compress to almost nothing (a million-row export is a few kilobytes), and
# membership is answered without the export file.


_ID_SET_CHUNK = 65_536


def encode_id_set(pks: Iterable[int] | array) -> bytes:
    # numpy keeps this at 8 bytes a key (a Python set of a million ints is ~60 MB):
    # one sorted copy, then the differences are taken and compressed a slice at a
    # time, so a million-row export's manifest adds 8 MB at its peak, not 25.
    values = np.sort(np.asarray(pks if isinstance(pks, array) else list(pks), dtype=np.int64))
    compressor = zlib.compressobj(6)
    parts, previous = [], None
    for start in range(0, values.size, _ID_SET_CHUNK):
        chunk = values[start:start + _ID_SET_CHUNK]
        first = np.array([previous is None or chunk[0] != previous])  # a key seen twice is stored once
        chunk = chunk[np.concatenate((first, chunk[1:] != chunk[:-1]))]
        deltas = np.diff(chunk, prepend=0 if previous is None else previous)
        parts.append(compressor.compress(deltas.astype("<i8", copy=False).tobytes()))
        previous = chunk[-1] if chunk.size else previous
    parts.append(compressor.flush())
    return b"".join(parts)


def decode_id_set(blob: bytes | memoryview | None) -> np.ndarray:
    if not blob:
        return np.zeros(0, dtype=np.int64)
    return np.cumsum(np.frombuffer(zlib.decompress(bytes(blob)), dtype="<i8"))


def id_set_intersection(blob: bytes | memoryview | None, pks: Iterable[int]) -> set[int]:
    wanted = np.asarray(sorted(set(pks)), dtype=np.int64)
    if not wanted.size or not blob:
        return set()
    return {int(pk) for pk in wanted[np.isin(wanted, decode_id_set(blob))]}
