"""Writes and the scoring path of the exemplar bank.

The bank of a detector profile is loaded once per server process and kept in
memory, keyed by its version: a score never reads the vectors from the
database once loaded. Each score checks a cheap fingerprint (two index
lookups on the flags plus this application's erasure generation, see
`feedback.selectors.approved_set_marker`); only when it moved is the approved
set read and hashed, and only when that version changed is anything embedded.
"""

import hashlib
import math
import threading
import time
from dataclasses import dataclass, replace

import numpy as np
from django.conf import settings as django_settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from consoles import webhooks
from consoles.errors import Conflict, InvalidInput
from consoles.models import Application
from feedback import selectors as feedback_selectors
from feedback.models import Region

from .bank import (
    KIND_FLAG,
    KIND_TWIN,
    TOLERANCE,
    AxisScore,
    BankIndex,
    ExternalVectors,
    FlagRow,
    adjust,
    bank_version,
    build_index,
    detector_only,
    exemplar_id,
    flag_digests,
    flag_pks_from_bytes,
)
from .embedding import Embedder, get_embedder
from .models import MAX_DIM, BankBuild, BankSettings, DetectorProfile, ExemplarVector
from .models import Embedder as EmbedderChoice
from .selectors import ScoreContext, bank_settings_get, score_context

MAX_SCORE_TEXT = 32_000  # characters; longer inputs are refused with 422
MAX_AXES = 64
MAX_VECTORS_PER_UPLOAD = 1000


def embedder() -> Embedder:
    return get_embedder(getattr(django_settings, "EXEMPLAR_EMBEDDER", "hashed-ngrams"))


# --- Settings and profiles ----------------------------------------------------------


def bank_settings_update(
    *, application: Application, enabled: bool, tau: float, actor: AbstractBaseUser | None = None
) -> BankSettings:
    if isinstance(tau, bool) or not isinstance(tau, int | float) or not 0 < tau <= 1:
        raise InvalidInput("τ must be above 0 and at most 1.", fields={"tau": "above 0 and at most 1"})
    with transaction.atomic():
        row, _ = BankSettings.objects.select_for_update().get_or_create(application=application)
        row.enabled, row.tau, row.updated_by = bool(enabled), float(tau), actor
        row.save()
    return row


def _clean_axes(application: Application, axes: object) -> list[str]:
    if isinstance(axes, str):
        axes = [a.strip() for a in axes.replace("\n", ",").split(",") if a.strip()]
    if not isinstance(axes, list | tuple) or not axes or not all(isinstance(a, str) and a for a in axes):
        raise InvalidInput("Give at least one axis.", fields={"axes": "at least one axis"})
    unknown = [a for a in axes if a not in application.axes]
    if unknown:
        raise InvalidInput(
            f"Not axes of this application: {', '.join(unknown)}.",
            fields={"axes": f"unknown: {', '.join(unknown)}; use {', '.join(application.axes)}"},
        )
    if len(set(axes)) != len(axes):
        raise InvalidInput("Each axis once.", fields={"axes": "each axis once"})
    return list(axes)


def _duplicate_profile(name: str) -> Conflict:
    return Conflict(
        f"A detector profile named {name!r} already exists in this application; nothing was saved. "
        "Choose another name, or change that profile's axes instead.",
        code="duplicate_profile",
        fields={"name": f"{name!r} already exists: choose another name, or edit that profile instead"},
    )


def profile_save(
    *, application: Application, name: str, axes: object, profile: DetectorProfile | None = None,
    embedder: str | None = None,
) -> DetectorProfile:
    """Create a detector profile, or rename / change the axes of `profile`.

    `embedder` (None: keep, or `console` for a new profile) may change only
    while an external profile holds no vectors: its vectors and dimension
    belong to the detector's embedding, not the console's.
    """
    name = (name or "").strip()
    row = profile or DetectorProfile(application=application)
    if row.application_id != application.pk:
        raise InvalidInput("This profile belongs to another application.", fields={"name": "unknown profile"})
    if embedder is not None and embedder != row.embedder:
        if embedder not in EmbedderChoice.values:
            raise InvalidInput(f"Use one of {', '.join(EmbedderChoice.values)}.",
                               fields={"embedder": f"one of {', '.join(EmbedderChoice.values)}"})
        if row.pk and row.dim is not None:
            raise Conflict(
                "This profile already holds the detector's vectors; delete it and add it again to change "
                "its embedder.", code="embedder_locked",
                fields={"embedder": "fixed once vectors were uploaded"},
            )
        row.embedder = embedder
    row.name, row.axes = name, _clean_axes(application, axes)
    try:
        row.full_clean()
    except ValidationError as exc:
        codes = {error.code for errors in exc.error_dict.values() for error in errors}
        if "duplicate_profile" in codes:
            raise _duplicate_profile(name) from exc
        fields = {("name" if k == NON_FIELD_ERRORS else k): "; ".join(v) for k, v in exc.message_dict.items()}
        raise InvalidInput(next(iter(fields.values())), fields=fields) from exc
    try:
        with transaction.atomic():
            row.save()
    except IntegrityError as exc:
        raise _duplicate_profile(name) from exc
    _cache.pop(row.pk, None)
    return row


def profile_delete(*, profile: DetectorProfile) -> None:
    _cache.pop(profile.pk, None)
    profile.delete()


# --- The bank: fingerprint, load, build ---------------------------------------------


@dataclass
class _Loaded:
    fingerprint: str
    index: BankIndex


_cache: dict[int, _Loaded] = {}
_locks: dict[int, threading.Lock] = {}
_locks_guard = threading.Lock()


def _lock(profile_pk: int) -> threading.Lock:
    with _locks_guard:
        return _locks.setdefault(profile_pk, threading.Lock())


def cache_clear() -> None:
    """Forget every loaded bank (tests; a process that must re-read the database)."""
    _cache.clear()


def bank_fingerprint(
    *, profile: DetectorProfile, bank_settings: BankSettings, embedder_id: str, marker: tuple | None = None
) -> str:
    """What the stored and in-memory banks are checked against on every score:
    the embedder, the profile, the erasure generation and feedback's marker of
    the approved set (`marker` when the caller already read it)."""
    if marker is None:
        marker = feedback_selectors.approved_set_marker(application=profile.application)
    latest_approved, latest_review = marker
    key = "|".join([
        embedder_id, str(profile.application_id), str(profile.pk), profile.name, ",".join(sorted(profile.axes)),
        str(bank_settings.generation),
        str(latest_approved), str(latest_review),
        profile.embedder, str(profile.dim), str(profile.vector_generation),
    ])
    return hashlib.sha256(key.encode()).hexdigest()


def _approved_rows(profile: DetectorProfile) -> list[FlagRow]:
    rows = []
    for pk, public_id, region, axis, verdict, prompt, answer, twin_prompt, twin_answer, weight in (
        feedback_selectors.approved_bank_rows(application=profile.application, axes=profile.axes)
    ):
        prompt_region = region == Region.PROMPT
        rows.append(FlagRow(
            pk=pk, public_id=public_id, region=region, axis=axis, verdict=verdict,
            text=prompt if prompt_region else answer,
            twin_text=twin_prompt if prompt_region else twin_answer,
            weight=weight,
        ))
    return rows


@dataclass(frozen=True)
class BankState:
    index: BankIndex
    built: bool  # this call embedded the approved set (the version changed)
    seconds: float = 0.0


def is_external(profile: DetectorProfile) -> bool:
    return profile.embedder == EmbedderChoice.EXTERNAL


def embedder_id(profile: DetectorProfile) -> str:
    """The id of the profile's embedding function, part of its bank's version."""
    if is_external(profile):
        return f"external/d{profile.dim or 0}"
    return embedder().id


def _vector_digests(profile: DetectorProfile) -> dict[str, bytes]:
    return {
        eid: bytes.fromhex(digest)
        for eid, digest in ExemplarVector.objects.filter(profile_id=profile.pk)
        .values_list("exemplar_id", "digest").iterator(chunk_size=5000)
    }


def _vectors(profile: DetectorProfile) -> dict[str, np.ndarray]:
    return {
        eid: np.frombuffer(bytes(vector), dtype="<f4")
        for eid, vector in ExemplarVector.objects.filter(profile_id=profile.pk)
        .values_list("exemplar_id", "vector").iterator(chunk_size=5000)
    }


def bank_load(
    *, profile: DetectorProfile, bank_settings: BankSettings | None = None, marker: tuple | None = None
) -> BankState:
    """The profile's current bank: from memory, else from the database, else built.

    Built only when the version (embedder + approved set, and for an external
    profile the digests of its vectors) differs from the stored one; the
    fingerprint check keeps the common case to two index lookups.
    """
    bank_settings = bank_settings or bank_settings_get(application=profile.application)
    emb_id = embedder_id(profile)
    fingerprint = bank_fingerprint(profile=profile, bank_settings=bank_settings, embedder_id=emb_id, marker=marker)
    cached = _cache.get(profile.pk)
    if cached is not None and cached.fingerprint == fingerprint:
        return BankState(cached.index, built=False)
    with _lock(profile.pk):
        cached = _cache.get(profile.pk)
        if cached is not None and cached.fingerprint == fingerprint:
            return BankState(cached.index, built=False)
        stored = (
            BankBuild.objects.filter(profile=profile).only("pk", "version", "fingerprint", "embedder").first()
        )
        if stored is not None and stored.fingerprint == fingerprint and stored.embedder == emb_id:
            # Another process (or a rebuild command) already checked this state.
            index = cached.index if cached and cached.index.version == stored.version else _read(stored)
            _cache[profile.pk] = _Loaded(fingerprint, index)
            return BankState(index, built=False)
        rows = _approved_rows(profile)
        if is_external(profile):
            emb = ExternalVectors(id=emb_id, dim=profile.dim or 0, digests=_vector_digests(profile))
        else:
            emb = embedder()
        version = bank_version(emb.id, [r.public_id for r in rows], flag_digests(rows, emb)[0])
        if cached is not None and cached.index.version == version:
            index = cached.index
        elif stored is not None and stored.version == version:
            index = _read(stored)
        else:
            started = time.perf_counter()
            if isinstance(emb, ExternalVectors):
                emb = replace(emb, vectors=_vectors(profile))
            index = build_index(rows, axes=profile.axes, embedder=emb, version=version)
            seconds = time.perf_counter() - started
            _store(profile, index, fingerprint, seconds)
            _cache[profile.pk] = _Loaded(fingerprint, index)
            return BankState(index, built=True, seconds=seconds)
        BankBuild.objects.filter(profile=profile, version=version).update(fingerprint=fingerprint)
        _cache[profile.pk] = _Loaded(fingerprint, index)
        return BankState(index, built=False)


def _read(stored: BankBuild) -> BankIndex:
    payload = BankBuild.objects.filter(pk=stored.pk).values_list("payload", flat=True).get()
    return BankIndex.from_bytes(payload)


def _store(profile: DetectorProfile, index: BankIndex, fingerprint: str, seconds: float) -> None:
    skipped = feedback_selectors.approved_count_outside(application=profile.application, axes=profile.axes)
    values = {
        "application": profile.application, "version": index.version, "embedder": index.embedder_id,
        "fingerprint": fingerprint, "exemplar_count": index.size, "flag_count": index.flag_count,
        "skipped_flag_count": skipped, "missing_vector_count": index.missing, "stats": index.stats(), "payload": index.to_bytes(),
        "flag_pks": index.flag_pks_bytes(), "built_at": timezone.now(), "build_seconds": round(seconds, 4),
    }
    with transaction.atomic():
        # Two processes building the same version write the same bytes: last one wins.
        BankBuild.objects.update_or_create(profile=profile, defaults=values)
        webhooks.event_record(application=profile.application_id, type="bank.rebuilt", data={"detector": profile.name, "version": index.version, "exemplars": index.size, "missing_vectors": index.missing})  # noqa: E501


def bank_rebuild(*, profile: DetectorProfile) -> BankState:
    """What `manage.py rebuild_bank` and the screen's button do: check, and build if the version changed."""
    return bank_load(profile=profile)


# --- Scoring ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ScoreResult:
    profile: DetectorProfile
    region: str
    enabled: bool
    tau: float
    version: str | None
    axes: dict[str, AxisScore]
    missing_vectors: int | None = None  # external profiles, when the bank was consulted

    def as_dict(self) -> dict:
        axes = {}
        for axis, score in self.axes.items():
            item = {"p_detector": score.p_detector, "threshold": score.threshold, "p": score.p, "flag": score.flag}
            if score.match is not None:
                item["exemplar_match"] = score.match.as_dict()
            axes[axis] = item
        bank = {"enabled": self.enabled, "tau": self.tau}
        if self.version:
            bank["version"] = self.version
        if self.missing_vectors is not None:
            bank["missing_vectors"] = self.missing_vectors
        return {"detector": self.profile.name, "region": self.region, "bank": bank, "axis_energy": axes}


def unit_vector(values: object, *, dim: int | None, field: str, errors: dict[str, str]) -> np.ndarray | None:
    """`values` as a float32 unit vector, or None with the reason in `errors[field]`.

    Finite numbers only (JSON parsers accept NaN and Infinity), the profile's
    dimension once it has one, not all zeros (no direction to normalise).
    """
    if not isinstance(values, list | tuple) or not values:
        errors[field] = "A non-empty list of numbers."
        return None
    if len(values) > MAX_DIM:
        errors[field] = f"At most {MAX_DIM} numbers."
        return None
    # The common case (plain floats and ints from JSON) checked without a Python
    # loop over the numbers; anything else (bools, numpy scalars) element by element.
    plain = set(map(type, values)) <= {float, int}
    if not plain and not all(not isinstance(v, bool) and isinstance(v, int | float) for v in values):
        errors[field] = "Finite numbers only."
        return None
    try:
        vector = np.asarray(values, dtype=np.float64)
    except OverflowError:  # an integer beyond float range
        vector = None
    if vector is None or not np.isfinite(vector).all():
        errors[field] = "Finite numbers only."
        return None
    if dim is not None and len(values) != dim:
        errors[field] = f"{len(values)} numbers; this profile's vectors have {dim}."
        return None
    norm = float(np.linalg.norm(vector))
    if not norm or not math.isfinite(norm):
        errors[field] = "Not all zeros (a vector needs a direction)."
        return None
    return (vector / norm).astype(np.float32)


def _validate(
    application: Application, detector: str, region: str, text: str, axis_energy: dict,
    embedding: object = None,
) -> tuple[ScoreContext, dict[str, tuple[float, float]], np.ndarray | None]:
    errors: dict[str, str] = {}
    # A NUL can never be in a name (PostgreSQL would refuse the query): unknown, not a 500.
    known = isinstance(detector, str) and "\x00" not in detector
    context = score_context(application=application, name=detector) if known else None
    profile = context.profile if context else None
    if profile is None:
        errors["detector"] = f"Unknown detector profile {detector!r} for this application."
    if region not in Region.values:
        errors["region"] = f"Use one of {', '.join(Region.values)}."
    if not isinstance(text, str):
        errors["text"] = "A string."
    elif len(text) > MAX_SCORE_TEXT:
        errors["text"] = f"At most {MAX_SCORE_TEXT} characters."
    energies: dict[str, tuple[float, float]] = {}
    if not isinstance(axis_energy, dict) or not axis_energy:
        errors["axis_energy"] = "Give at least one axis with its p_detector and threshold."
    elif len(axis_energy) > MAX_AXES:
        errors["axis_energy"] = f"At most {MAX_AXES} axes."
    else:
        for axis, values in axis_energy.items():
            if profile is not None and axis not in profile.axes:
                errors[f"axis_energy.{axis}"] = (
                    f"{axis!r} is not an axis of detector {profile.name!r} ({', '.join(profile.axes)})."
                )
                continue
            p, threshold = values
            for name, value in (("p_detector", p), ("threshold", threshold)):
                if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
                    errors[f"axis_energy.{axis}.{name}"] = "A number between 0 and 1."
            energies[axis] = (float(p), float(threshold))
    query = None
    if profile is not None and is_external(profile):
        if embedding is None:
            errors["embedding"] = (f"Detector {profile.name!r} embeds externally: send the query's vector"
                                   + (f" ({profile.dim} numbers)." if profile.dim else "."))
        else:
            query = unit_vector(embedding, dim=profile.dim, field="embedding", errors=errors)
    elif profile is not None and embedding is not None:
        errors["embedding"] = f"Detector {profile.name!r} is embedded by the console: leave embedding out."
    if errors:
        first = next(iter(errors))
        raise InvalidInput(f"{first}: {errors[first]}", fields=errors)
    return context, energies, query


def score(
    *, application: Application, detector: str, region: str, text: str, axis_energy: dict[str, tuple[float, float]],
    preview: bool = False, embedding: list[float] | None = None,
) -> ScoreResult:
    """Scores of one input, adjusted by the bank when it is enabled for the application.

    `axis_energy`: axis -> (p_detector, threshold). Disabled (the default): no
    bank is built or consulted and each axis is exactly the detector's own
    (flag = p_detector >= threshold). `preview` (the screen's "try it")
    consults the bank even when disabled. An external profile needs
    `embedding`, the query's vector in the detector's own space.
    """
    # One database round trip in the common case: profile, settings and the
    # approved-set marker together (selectors.score_context).
    context, energies, query = _validate(application, detector, region, text, axis_energy, embedding)
    profile, bank_settings = context.profile, context.bank_settings
    if not (bank_settings.enabled or preview):
        axes = {axis: detector_only(p, t) for axis, (p, t) in energies.items()}
        return ScoreResult(profile, region, False, bank_settings.tau, None, axes)
    index = bank_load(profile=profile, bank_settings=bank_settings, marker=context.marker).index
    matches = {}
    # A score needs only the exemplars at or above τ (large blocks are pruned to
    # those); the screen's preview also shows the closest ones below it.
    floor = None if preview else bank_settings.tau - TOLERANCE
    if query is not None:
        if index.size:
            matches = index.best_matches(query, region, energies, floor)
    elif index.size and text.strip():
        matches = index.best_matches(embedder().embed([text])[0], region, energies, floor)
    axes = {}
    for axis, (p, t) in energies.items():
        danger, benign = matches.get(axis, (None, None))
        axes[axis] = adjust(p, t, danger, benign, bank_settings.tau)
    missing = index.missing if is_external(profile) else None
    return ScoreResult(profile, region, bank_settings.enabled, bank_settings.tau, index.version, axes, missing)


# --- Erasure -----------------------------------------------------------------------------


def bank_erase_flags(*, application: Application, flag_pks: list[int]) -> int:
    """Erasure hook (registered with feedback): remove these flags' exemplars from
    every stored bank of the application, in the erasure's transaction.

    Returns how many exemplars went. The stored bank keeps the version a
    rebuild from the remaining approved set would give, so nothing is
    re-embedded; the generation bump tells every server process to drop its
    in-memory copy on its next score.
    """
    if not flag_pks:
        return 0
    # The detector's vectors of these flags' texts go with them.
    ExemplarVector.objects.filter(application=application, flag_id__in=flag_pks).delete()
    BankSettings.objects.get_or_create(application=application)
    BankSettings.objects.filter(application=application).update(generation=F("generation") + 1)
    wanted = np.asarray(sorted(set(flag_pks)), dtype=np.int64)
    removed = 0
    builds = BankBuild.objects.select_for_update().filter(application=application).only("pk", "flag_pks", "profile")
    for build in builds:
        if not np.isin(flag_pks_from_bytes(build.flag_pks), wanted).any():
            continue
        index, gone = _read(build).without_flags(wanted.tolist())
        BankBuild.objects.filter(pk=build.pk).update(
            version=index.version, fingerprint="", exemplar_count=index.size, flag_count=index.flag_count,
            missing_vector_count=index.missing,
            stats=index.stats(), payload=index.to_bytes(), flag_pks=index.flag_pks_bytes(),
        )
        _cache.pop(build.profile_id, None)
        removed += gone
    return removed


# --- Detector-owned vectors (external profiles) -----------------------------------------


@dataclass(frozen=True)
class VectorUpload:
    profile: DetectorProfile
    dim: int
    created: int
    updated: int
    unchanged: int

    def as_dict(self) -> dict:
        return {"detector": self.profile.name, "dim": self.dim, "created": self.created, "updated": self.updated,
                "unchanged": self.unchanged}


def _current_exemplars(profile: DetectorProfile, ids: list[str]) -> dict[str, int]:
    """Of these exemplar ids, those that are exemplars of the profile's bank now: id -> flag pk."""
    public_ids = sorted({eid.split("-", 1)[0] for eid in ids})
    out: dict[str, int] = {}
    for pk, public_id, region, _axis, _verdict, prompt, answer, twin_prompt, twin_answer, _weight in (
        feedback_selectors.approved_bank_rows(application=profile.application, axes=profile.axes,
                                              public_ids=public_ids)
    ):
        text, twin = (prompt, twin_prompt) if region == Region.PROMPT else (answer, twin_answer)
        for kind, value in ((KIND_FLAG, text), (KIND_TWIN, twin)):
            if value.strip():
                out[exemplar_id(public_id, kind, value)] = pk
    return out


def vectors_upload(*, profile: DetectorProfile, dim: object, vectors: object) -> VectorUpload:
    """Store the detector's vectors of exemplars of an external profile, whole or not at all.

    Each must name a current exemplar of the profile (see
    `selectors.exemplar_page`), have `dim` finite numbers, not all zero; it
    is stored normalised to the unit sphere. The first upload fixes the
    profile's dimension. A new or changed vector bumps the profile's vector
    generation in the same transaction, so every server re-checks the version.
    """
    errors: dict[str, str] = {}
    if not is_external(profile):
        raise InvalidInput(f"Detector {profile.name!r} is embedded by the console; it takes no vectors.",
                           code="not_external", fields={"detector": "not an external profile"})
    if isinstance(dim, bool) or not isinstance(dim, int) or not 1 <= dim <= MAX_DIM:
        errors["dim"] = f"A whole number from 1 to {MAX_DIM}."
    elif profile.dim is not None and dim != profile.dim:
        errors["dim"] = f"This profile's vectors have {profile.dim} numbers (fixed by its first upload)."
    if not isinstance(vectors, list | tuple) or not 1 <= len(vectors) <= MAX_VECTORS_PER_UPLOAD:
        errors["vectors"] = f"From 1 to {MAX_VECTORS_PER_UPLOAD} vectors a request."
    if errors:
        first = next(iter(errors))
        raise InvalidInput(f"{first}: {errors[first]}", fields=errors)
    parsed: dict[str, np.ndarray] = {}
    positions: dict[str, int] = {}
    for i, item in enumerate(vectors):
        eid = item.get("exemplar_id") if isinstance(item, dict) else None
        if not isinstance(eid, str) or not eid or "\x00" in eid:
            errors[f"vectors[{i}].exemplar_id"] = "An exemplar id from GET .../exemplars."
            continue
        if eid in positions:
            errors[f"vectors[{i}].exemplar_id"] = "Named twice in this request."
            continue
        positions[eid] = i
        vector = unit_vector(item.get("vector"), dim=dim, field=f"vectors[{i}].vector", errors=errors)
        if vector is not None:
            parsed[eid] = vector
    current = _current_exemplars(profile, list(positions)) if positions else {}
    for eid, i in positions.items():
        if eid not in current:
            errors[f"vectors[{i}].exemplar_id"] = (
                "Not an exemplar of this profile now (unknown, not approved, another axis, or its text changed)."
            )
    if errors:
        first = next(iter(errors))
        raise InvalidInput(f"{first}: {errors[first]}", fields=errors)
    now = timezone.now()
    with transaction.atomic():
        locked = DetectorProfile.objects.select_for_update().get(pk=profile.pk)
        if locked.dim is not None and locked.dim != dim:  # another upload fixed it meanwhile
            raise Conflict(f"This profile's vectors have {locked.dim} numbers.", code="dim_changed",
                           fields={"dim": f"{locked.dim}"})
        existing = {
            row.exemplar_id: row for row in ExemplarVector.objects.filter(profile=locked, exemplar_id__in=list(parsed))
        }
        created, changed = [], []
        for eid, vector in parsed.items():
            data = vector.astype("<f4").tobytes()
            digest = hashlib.sha256(data).hexdigest()
            row = existing.get(eid)
            if row is None:
                created.append(ExemplarVector(application_id=locked.application_id, profile=locked,
                                              flag_id=current[eid], exemplar_id=eid, vector=data,
                                              digest=digest, updated_at=now))
            elif row.digest != digest:
                row.vector, row.digest, row.updated_at = data, digest, now
                changed.append(row)
        ExemplarVector.objects.bulk_create(created)
        ExemplarVector.objects.bulk_update(changed, ["vector", "digest", "updated_at"])
        if created or changed or locked.dim is None:
            DetectorProfile.objects.filter(pk=locked.pk).update(
                dim=dim, vector_generation=F("vector_generation") + 1, updated_at=now,
            )
    profile.dim = dim
    _cache.pop(profile.pk, None)
    return VectorUpload(profile, dim, len(created), len(changed), len(parsed) - len(created) - len(changed))
