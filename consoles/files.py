"""Writing operator-named files safely: exports, drafts, the teaching corpus.

A target is checked before any work (an existing directory, writable; never a
symbolic link; an existing file only if it is an earlier export, known by the
manifest beside it). The file is written in full beside its target, fsynced,
then renamed over it, so a reader sees the old file or the whole new one.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from consoles.errors import DomainError


class ExportPathError(DomainError):
    """The export cannot be written where the operator asked; nothing was written."""

    status = 422
    code = "unwritable_path"


# Every manifest this console writes says so: with the file's sha256 it is what lets a
# later export replace the file. Any other JSON beside a file (a `.manifest.json` of
# another tool, or one with a value someone put there) does not.
MANIFEST_SCHEMA = "curator-console/export-manifest/1"


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
            f"Cannot write {path}: directory {parent} does not exist.", fields={"out": "does not exist"}
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
    if path.exists() and not is_our_export(path):
        raise ExportPathError(
            f"Cannot write {real}: the file exists and is not an export of this console (no "
            f"{manifest_path(path).name} of ours beside it with the file's sha256); "
            "choose another path or remove it.",
            fields={"out": "exists and is not an export"},
        )
    return path


def is_our_export(path: Path) -> bool:
    """Whether `path` is a file this console wrote and nobody changed since: its manifest
    has our schema and names the sha256 the file still has."""
    try:
        manifest = read_manifest(path)
    except (OSError, ValueError):
        return False
    if not isinstance(manifest, dict) or manifest.get("schema") != MANIFEST_SCHEMA:
        return False
    recorded = manifest.get("sha256")
    if not isinstance(recorded, str):
        return False
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as existing:
            for block in iter(lambda: existing.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return False
    return digest.hexdigest() == recorded


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
        self.done = False  # committed or discarded: nothing left to do
        self.committed = False  # the file is at `path`

    def commit(self) -> None:
        try:
            os.replace(self.tmp_name, self.path)
        except OSError as exc:
            self.discard()
            raise ExportPathError(f"Cannot write {self.path}: {exc.strerror or exc}.") from exc
        self.done = self.committed = True
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


def publish(staged: StagedFile, manifest: dict[str, Any]) -> None:
    """Rename a staged export into place with its manifest beside it.

    The manifest goes first: an export never stands without the manifest that
    marks it as ours (the next run would refuse to replace it as "not an export").
    If the rename then fails, the previous manifest is put back, or the new one
    removed, so the file that stays is described by its own manifest.
    """
    manifest = {"schema": MANIFEST_SCHEMA, **manifest}
    target = manifest_path(staged.path)
    try:
        previous = target.read_bytes()
    except OSError:
        previous = None
    try:
        write_manifest(staged.path, manifest)
    except BaseException:
        staged.discard()
        raise
    try:
        staged.commit()
    except BaseException:
        with contextlib.suppress(OSError):
            if previous is None:
                target.unlink()
            else:
                atomic_write(target, [previous])
        raise


def read_manifest(path: Path) -> dict[str, Any] | None:
    target = manifest_path(Path(path))
    try:
        return json.loads(target.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
