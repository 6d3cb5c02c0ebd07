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
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import zlib
from array import array
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from consoles.errors import DomainError

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

# Compact separators and raw UTF-8: the smallest valid JSON, one object per line.
_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode


class ExportPathError(DomainError):
    """The export cannot be written where the operator asked; nothing was written."""

    status = 422
    code = "unwritable_path"


def iso_utc(moment: datetime | None) -> str | None:
    """`2026-06-26T10:14:33+00:00`: seed 001's timestamp shape (UTC, whole seconds)."""
    if moment is None:
        return None
    if moment.tzinfo is None:
        # Django stores UTC; a naive value here can only be UTC read back without tzinfo.
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat(timespec="seconds")


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
        "created_at": iso_utc(created_at),
        "source": SOURCE_BY_AUTHOR_KIND.get(author_kind, "human_feedback"),
    }


def export_line(row: tuple, *, application_id: str) -> str:
    """One JSONL line (with its trailing newline)."""
    return encode_row(row, application_id=application_id) + "\n"


def encode_row(row: tuple, *, application_id: str) -> str:
    """The line's JSON text (no newline): the reference encoding. The selectors
    let SQLite (`json_object`) and PostgreSQL (`row_to_json`) build the same
    bytes in the database, which is several times faster; a test holds the
    three to byte-identical output."""
    return _encode(export_record(row, application_id=application_id))


@dataclass
class ExportTally:
    """What a finished export contained, accumulated while streaming.

    `flag_pks` keeps only 8 bytes per row (an `array`), so a million-row export
    can still record exactly which flags it held, which is what erasure needs to
    find the files an erased subject appears in.
    """

    rows: int = 0
    bytes: int = 0
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
    rows: Iterable[tuple], *, application_id: str, batch_size: int = 1000
) -> Iterator[list[tuple[int, str, int, str]]]:
    """Column tuples (`EXPORT_COLUMNS`) to what `jsonl_chunks` takes, encoded in Python."""
    batch: list[tuple[int, str, int, str]] = []
    for row in rows:
        batch.append((row[0], row[1], row[2], encode_row(row, application_id=application_id)))
        if len(batch) >= batch_size:
            yield batch
            batch = []
    if batch:
        yield batch


# --- Files -------------------------------------------------------------------


def manifest_path(path: Path) -> Path:
    """The manifest sits next to the export: `corpus.jsonl` -> `corpus.jsonl.manifest.json`."""
    return path.with_name(path.name + ".manifest.json")


def check_writable(path: Path) -> Path:
    """Refuse an export target before any work is done (one clear message)."""
    path = Path(path).expanduser()
    if path.is_dir():
        raise ExportPathError(f"Cannot write {path}: it is a directory.", fields={"out": "is a directory"})
    parent = path.parent
    if not parent.is_dir():
        raise ExportPathError(
            f"Cannot write {path}: directory {parent} does not exist.", fields={"out": "no such directory"}
        )
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ExportPathError(
            f"Cannot write {path}: directory {parent} is not writable.", fields={"out": "not writable"}
        )
    return path


def check_export_target(path: Path) -> Path:
    """An `--out` may replace an earlier export (its manifest sits beside it), never
    another file: `--out ../../consoles/settings.py` or a symlink to /etc/passwd is
    refused before anything is read, with the real, resolved path in the message."""
    path = check_writable(path)
    real = path.resolve()
    if path.is_symlink():
        raise ExportPathError(
            f"Cannot write {path}: it is a symbolic link (to {real}); give the real path.",
            fields={"out": "is a symbolic link"},
        )
    if path.exists():
        try:
            ours = read_manifest(path) is not None
        except (OSError, ValueError):
            ours = False
        if not ours:
            raise ExportPathError(
                f"Cannot write {real}: the file exists and is not an export (no "
                f"{manifest_path(path).name} beside it); choose another path or remove it.",
                fields={"out": "exists and is not an export"},
            )
    return path


class StagedFile:
    """An export written in full to a temporary file beside its target, not yet visible.

    `commit()` renames it over the target (atomic: same directory, same
    filesystem); `discard()` removes it. Staging lets the caller record what the
    file holds (the manifest row) before the file appears, so erasure can never
    miss a file that exists.
    """

    def __init__(self, path: Path, tmp_name: str, size: int) -> None:
        self.path = path
        self.tmp_name = tmp_name
        self.size = size
        self.done = False

    def commit(self) -> None:
        try:
            os.replace(self.tmp_name, self.path)
        except OSError as exc:
            self.discard()
            raise ExportPathError(f"Cannot write {self.path}: {exc.strerror or exc}.") from exc
        self.done = True
        _fsync_directory(self.path.parent)

    def discard(self) -> None:
        if not self.done:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.tmp_name)
            self.done = True


def stage_write(path: Path, chunks: Iterable[bytes]) -> StagedFile:
    """Write `chunks` to a temporary file next to `path`, fsynced; see `StagedFile`.

    If anything fails, including the chunk iterator (the database, mid-export),
    the temporary file is removed and nothing appears at `path`. Files are
    created owner-readable only (0600): they hold end users' text.
    """
    path = check_writable(path)
    try:
        fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".partial")
    except OSError as exc:
        raise ExportPathError(f"Cannot write {path}: {exc.strerror}.", fields={"out": "not writable"}) from exc
    written = 0
    try:
        with os.fdopen(fd, "wb") as handle:
            for chunk in chunks:
                handle.write(chunk)
                written += len(chunk)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        if isinstance(exc, OSError):
            raise ExportPathError(f"Cannot write {path}: {exc.strerror or exc}.") from exc
        raise
    return StagedFile(path, tmp_name, written)


def atomic_write(path: Path, chunks: Iterable[bytes]) -> int:
    """Write `chunks` to `path` so that a reader sees the old file or the whole new
    one, never a partial file: temporary file in the same directory, fsync,
    rename, fsync of the directory (so the rename survives a crash)."""
    staged = stage_write(path, chunks)
    staged.commit()
    return staged.size


def _fsync_directory(directory: Path) -> None:
    # Not every platform lets a directory be opened for fsync; the rename is
    # still atomic there, only its durability across a power cut is weaker.
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_manifest(path: Path, manifest: dict[str, Any]) -> Path:
    """Write the manifest JSON next to the export, atomically too."""
    target = manifest_path(path)
    body = (json.dumps(manifest, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()
    atomic_write(target, [body])
    return target


def read_manifest(path: Path) -> dict[str, Any] | None:
    target = manifest_path(Path(path))
    try:
        return json.loads(target.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None


# --- Which flags an export held ----------------------------------------------
#
# Sorted primary keys, delta-encoded and zlib-compressed: consecutive keys
# compress to almost nothing (a million-row export is a few kilobytes), and
# membership is answered without the export file.


def encode_id_set(pks: Iterable[int] | array) -> bytes:
    # numpy keeps this at 8 bytes a key (a Python set of a million ints is ~60 MB).
    values = np.unique(np.asarray(pks if isinstance(pks, array) else list(pks), dtype=np.int64))
    return zlib.compress(np.diff(values, prepend=0).astype("<i8").tobytes(), 6)


def decode_id_set(blob: bytes | memoryview | None) -> np.ndarray:
    if not blob:
        return np.zeros(0, dtype=np.int64)
    return np.cumsum(np.frombuffer(zlib.decompress(bytes(blob)), dtype="<i8"))


def id_set_intersection(blob: bytes | memoryview | None, pks: Iterable[int]) -> set[int]:
    wanted = np.asarray(sorted(set(pks)), dtype=np.int64)
    if not wanted.size or not blob:
        return set()
    return {int(pk) for pk in wanted[np.isin(wanted, decode_id_set(blob))]}
