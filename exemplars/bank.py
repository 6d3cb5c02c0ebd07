"""The exemplar bank as a plain-Python / numpy structure (no ORM): what an
approved flag contributes, the deterministic version, building, persisting,
erasing rows, matching a query and adjusting a detector's scores.

What a flag contributes (seed 001, "episodic exemplar bank"): the text of its
region (the prompt for a `prompt` flag, the answer for an `answer` flag) on
the side of its verdict: a false negative is a *danger* exemplar (we missed
this before), a false positive a *benign* one (a known over-flag). A flag's
contrastive twin (`twin_prompt` / `twin_answer`, the same region) is a benign
exemplar next to the dangerous one; its similarity counts times the flag's
`weight` (1 when unset), so a weight below τ can never suppress on its own.

Scoring, per requested axis of the region (cosine on the unit sphere):
- a danger match (cosine >= τ) raises the axis: p = max(p, threshold + MARGIN), flag true;
- else a benign match (weighted cosine >= τ) suppresses it: p = min(p, threshold - MARGIN), flag false;
- a danger match always wins over a benign one;
- no match: the detector's own p and flag (p >= threshold) unchanged.
p stays within [0, 1].
"""

import hashlib
import io
import math
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

MARGIN = 0.01
# Similarities are float32; a match is cosine >= τ within this tolerance, so a
# query exactly at τ matches whatever the rounding of the last bit.
TOLERANCE = 1e-6

REGIONS = ("prompt", "answer")
DANGER, BENIGN = 0, 1
VERDICT_BY_SIDE = {DANGER: "false_negative", BENIGN: "false_positive"}
SIDE_BY_VERDICT = {"false_negative": DANGER, "false_positive": BENIGN}
KIND_FLAG, KIND_TWIN = 0, 1
KINDS = {KIND_FLAG: "flag", KIND_TWIN: "twin"}

# Pruned matching (a score that only needs the matches at or above τ): a block
# of at least PRUNE_MIN_ROWS rows is first scanned on a sketch of each row, its
# coordinates along the bank's top principal directions plus the norm of what
# is left. By Cauchy-Schwarz, q·x <= q_top·x_top + |q_rest| |x_rest|, so a row
# whose bound is below the floor cannot match and only the others are scored
# exactly (the same float32 products as the full scan, bit for bit). The
# slacks cover float32 rounding of the sketch, orders of magnitude above it.
PRUNE_MIN_ROWS = 2048
PRUNE_SLACK = 2e-3  # on the bound, in cosine
_NORM_SLACK = 1e-5  # added to squared residual norms (never under-estimated)
_SKETCH_SAMPLE = 20_000  # rows the principal directions are estimated from


def sketch_width(dim: int) -> int:
    """How many principal coordinates a sketch keeps: a fifth of the dimension (76 of 384).

    Fewer leave too loose a bound on isotropic vectors (at 64 of 384, 3% of the rows of a
    random query were rescored in full); more cost their own scan (measured with 50,000 rows).
    """
    return min(dim, max(8, dim // 5))


@dataclass(frozen=True)
class _Sketch:
    directions: np.ndarray  # (dim, k) float32, orthonormal columns
    top: np.ndarray  # (rows, k) float32: each row's coordinates along them
    rest: np.ndarray  # (rows,) float32: an upper bound of the norm of the remainder


def _sketch(vectors: np.ndarray) -> _Sketch:
    rows, dim = vectors.shape
    k = sketch_width(dim)
    step = max(1, rows // _SKETCH_SAMPLE)
    sample = vectors[::step].astype(np.float64)
    # The uncentred second moment: its top eigenvectors carry most of the rows' energy.
    _, eigenvectors = np.linalg.eigh(sample.T @ sample)
    directions = np.ascontiguousarray(eigenvectors[:, ::-1][:, :k], dtype=np.float32)
    top = np.ascontiguousarray(vectors @ directions, dtype=np.float32)
    norms = np.einsum("ij,ij->i", vectors, vectors, dtype=np.float64)
    kept = np.einsum("ij,ij->i", top, top, dtype=np.float64)
    rest = np.sqrt(np.maximum(norms - kept, 0.0) + _NORM_SLACK).astype(np.float32)
    return _Sketch(directions=directions, top=top, rest=rest)


@dataclass(frozen=True)
class FlagRow:
    """The fields of one approved flag that matter to the bank."""

    pk: int
    public_id: str
    region: str
    axis: str
    verdict: str
    text: str
    twin_text: str = ""
    weight: float | None = None

    def digest(self) -> bytes:
        """SHA-256 over exactly what this flag contributes (texts hashed, weight exact)."""
        parts = [
            self.public_id, self.region, self.axis, self.verdict,
            hashlib.sha256(self.text.encode()).hexdigest(),
            hashlib.sha256(self.twin_text.encode()).hexdigest(),
            "" if self.weight is None else repr(float(self.weight)),
        ]
        return hashlib.sha256("\x1f".join(parts).encode()).digest()


def exemplar_id(public_id: str, kind: int, text: str) -> str:
    """The id of one exemplar: its flag, its side (the flag's text or its twin) and its text.

    A corrected text gives a new id, so the detector's old vector no longer
    counts and the exemplar is listed as missing again.
    """
    side = "f" if kind == KIND_FLAG else "t"
    return f"{public_id}-{side}-{hashlib.sha256(text.encode()).hexdigest()[:12]}"


@dataclass(frozen=True)
class ExternalVectors:
    """A detector-owned embedding: the vectors it uploaded, by exemplar id.

    Stands where an embedder would in `build_index`; `vectors` may hold only
    the ids `digests` names (None while only the version is being checked).
    """

    id: str
    dim: int
    digests: Mapping[str, bytes]
    vectors: Mapping[str, np.ndarray] | None = None

    def flag_digest(self, row: FlagRow) -> tuple[bytes, int]:
        """The flag's digest extended by its exemplars' vector digests, and how many have none."""
        h = hashlib.sha256(row.digest())
        missing = 0
        for kind, text in ((KIND_FLAG, row.text), (KIND_TWIN, row.twin_text)):
            if not text.strip():
                continue
            digest = self.digests.get(exemplar_id(row.public_id, kind, text))
            if digest is None:
                missing += 1
                h.update(b"-")
            else:
                h.update(digest)
        return h.digest(), missing


def bank_version(embedder_id: str, public_ids: Sequence[str], digests: Sequence[bytes]) -> str:
    """SHA-256 over the embedder id and the approved set sorted by flag id.

    Reproducible from the same inputs on any machine, whatever order the rows
    were read in; it changes when a flag enters or leaves the set, when a
    contributing field changes, or when the embedder changes.
    """
    h = hashlib.sha256(f"exemplar-bank/v1\n{embedder_id}\n".encode())
    for _, digest in sorted(zip(public_ids, digests, strict=True)):
        h.update(digest)
    return h.hexdigest()


@dataclass(frozen=True)
class Match:
    side: int
    sim: float  # the cosine (for a twin: times its weight)
    flag_id: str
    kind: str  # "flag" | "twin"

    @property
    def verdict(self) -> str:
        return VERDICT_BY_SIDE[self.side]

    def as_dict(self) -> dict:
        return {"verdict": self.verdict, "sim": round(self.sim, 6), "flag_id": self.flag_id, "source": self.kind}


@dataclass(frozen=True)
class AxisScore:
    p_detector: float
    threshold: float
    p: float
    flag: bool
    match: Match | None = None  # the exemplar that moved the axis
    best_danger: Match | None = None  # the closest of each side, matched or not (for the screen)
    best_benign: Match | None = None


def detector_only(p: float, threshold: float) -> AxisScore:
    """What the detector alone says: the bank disabled, or nothing matched."""
    return AxisScore(p_detector=p, threshold=threshold, p=p, flag=p >= threshold)


def adjust(p: float, threshold: float, danger: Match | None, benign: Match | None, tau: float) -> AxisScore:
    floor = tau - TOLERANCE
    if danger is not None and danger.sim >= floor:
        return AxisScore(p, threshold, min(1.0, max(p, threshold + MARGIN)), True, danger, danger, benign)
    if benign is not None and benign.sim >= floor:
        return AxisScore(p, threshold, max(0.0, min(p, threshold - MARGIN)), False, benign, danger, benign)
    base = detector_only(p, threshold)
    return AxisScore(base.p_detector, base.threshold, base.p, base.flag, None, danger, benign)


@dataclass
class _Block:
    """The rows of one (region, axis), danger rows first: contiguous slices of the bank."""

    vectors: np.ndarray
    start: int  # the block's first row in the bank
    n_danger: int
    weights: np.ndarray | None  # of the benign rows, only when one differs from 1
    row_flag: np.ndarray
    row_kind: np.ndarray


@dataclass
class BankIndex:
    """An immutable built bank. Rows are sorted by (region, axis, side, flag, kind)."""

    version: str
    embedder_id: str
    axes: list[str]
    vectors: np.ndarray  # (rows, dim) float32, unit norm
    row_flag: np.ndarray  # int32 index into the flag arrays
    row_region: np.ndarray  # int8 index into REGIONS
    row_axis: np.ndarray  # int16 index into axes
    row_side: np.ndarray  # int8 DANGER | BENIGN
    row_kind: np.ndarray  # int8 KIND_FLAG | KIND_TWIN
    row_weight: np.ndarray  # float32
    flag_pk: np.ndarray  # int64, sorted by public id
    flag_public_id: list[str]
    flag_digest: np.ndarray  # (flags, 32) uint8
    # External profiles: per flag, how many of its exemplars have no vector yet.
    flag_missing: np.ndarray | None = None
    _blocks: dict[tuple[str, str], _Block] = field(default_factory=dict, repr=False)
    _sketch: _Sketch | None = field(default=None, repr=False, compare=False)
    _sketch_lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._blocks = {}
        self._sketch = None
        n = len(self.row_flag)
        if not n:
            return
        keys = self.row_region.astype(np.int64) * 65536 + self.row_axis.astype(np.int64)
        starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
        ends = np.r_[starts[1:], n]
        for start, end in zip(starts.tolist(), ends.tolist(), strict=True):
            region = REGIONS[int(self.row_region[start])]
            axis = self.axes[int(self.row_axis[start])]
            n_danger = int(np.count_nonzero(self.row_side[start:end] == DANGER))
            weights = self.row_weight[start + n_danger:end]
            self._blocks[(region, axis)] = _Block(
                vectors=self.vectors[start:end],
                start=start,
                n_danger=n_danger,
                weights=weights if np.any(weights != 1) else None,
                row_flag=self.row_flag[start:end],
                row_kind=self.row_kind[start:end],
            )

    # --- facts -----------------------------------------------------------------

    @property
    def size(self) -> int:
        return int(len(self.row_flag))

    @property
    def flag_count(self) -> int:
        return len(self.flag_public_id)

    @property
    def missing(self) -> int:
        """Approved exemplars left out because the detector uploaded no vector for them."""
        return 0 if self.flag_missing is None else int(self.flag_missing.sum())

    def stats(self) -> dict:
        """Exemplars per axis, region and side: {axis: {region: {"danger", "benign", "twins"}}}."""
        out: dict = {}
        for (region, axis), block in sorted(self._blocks.items(), key=lambda item: (item[0][1], item[0][0])):
            n = len(block.row_flag)
            out.setdefault(axis, {})[region] = {
                "danger": block.n_danger,
                "benign": n - block.n_danger,
                "twins": int(np.count_nonzero(block.row_kind == KIND_TWIN)),
            }
        return out

    # --- matching --------------------------------------------------------------

    def best_matches(
        self, query: np.ndarray, region: str, axes: Iterable[str], floor: float | None = None,
    ) -> dict[str, tuple[Match | None, Match | None]]:
        """The closest danger and benign exemplar per axis of `region` (None when it has none).

        Only the blocks of the requested axes are multiplied: the cost is the
        rows of those axes in that region, not the whole bank. With `floor`
        (what a score needs: τ less the tolerance) large blocks are pruned
        first (see PRUNE_MIN_ROWS) and there a side's closest exemplar is
        given only when it reaches the floor: the same matches as the full
        scan at a fraction of the memory traffic. Without it (the screen's
        preview) every block is scanned and the closest are always given.
        """
        out: dict[str, tuple[Match | None, Match | None]] = {}
        sketch = qtop = None
        qrest = 0.0
        for axis in axes:
            block = self._blocks.get((region, axis))
            if block is None:
                out[axis] = (None, None)
                continue
            if floor is not None and len(block.row_flag) >= PRUNE_MIN_ROWS:
                if sketch is None:
                    sketch = self.sketch()
                    qtop = query @ sketch.directions
                    qrest = math.sqrt(max(float(query @ query) - float(qtop @ qtop), 0.0) + _NORM_SLACK)
                out[axis] = self._pruned(block, sketch, query, qtop, qrest, floor)
                continue
            # einsum's own single-threaded loop, not BLAS: a multi-threaded gemv
            # spins threads against the other workers of a busy server and its
            # p95 explodes (measured in bench/bench_bank.py); single-threaded,
            # a mat-vec over one region's rows is memory-bound and predictable.
            sims = np.einsum("ij,j->i", block.vectors, query)
            danger = benign = None
            if block.n_danger:
                i = int(np.argmax(sims[: block.n_danger]))
                danger = self._match(block, i, DANGER, float(sims[i]))
            if len(sims) > block.n_danger:
                rest = sims[block.n_danger:]
                if block.weights is not None:
                    rest = rest * block.weights
                j = int(np.argmax(rest))
                benign = self._match(block, block.n_danger + j, BENIGN, float(rest[j]))
            out[axis] = (danger, benign)
        return out

    def sketch(self) -> _Sketch:
        """The pruning sketch of every row, computed once per loaded bank (on first use)."""
        if self._sketch is None:
            with self._sketch_lock:
                if self._sketch is None:
                    self._sketch = _sketch(self.vectors)
        return self._sketch

    def _pruned(self, block: _Block, sketch: _Sketch, query: np.ndarray, qtop: np.ndarray, qrest: float,
                floor: float) -> tuple[Match | None, Match | None]:
        start, n, nd = block.start, len(block.row_flag), block.n_danger
        bound = np.einsum("ij,j->i", sketch.top[start:start + n], qtop) + sketch.rest[start:start + n] * qrest
        cut = floor - PRUNE_SLACK
        danger = benign = None
        if nd:
            rows = np.flatnonzero(bound[:nd] >= cut)
            if rows.size:
                sims = np.einsum("ij,j->i", block.vectors[rows], query)
                i = int(np.argmax(sims))
                if sims[i] >= floor:
                    danger = self._match(block, int(rows[i]), DANGER, float(sims[i]))
        if n > nd:
            upper = bound[nd:] if block.weights is None else bound[nd:] * block.weights  # weights are in [0, 1]
            rows = np.flatnonzero(upper >= cut)
            if rows.size:
                sims = np.einsum("ij,j->i", block.vectors[nd + rows], query)
                if block.weights is not None:
                    sims = sims * block.weights[rows]
                j = int(np.argmax(sims))
                if sims[j] >= floor:
                    benign = self._match(block, nd + int(rows[j]), BENIGN, float(sims[j]))
        return danger, benign

    def _match(self, block: _Block, row: int, side: int, sim: float) -> Match:
        return Match(side=side, sim=sim, flag_id=self.flag_public_id[int(block.row_flag[row])],
                     kind=KINDS[int(block.row_kind[row])])

    # --- erasure -----------------------------------------------------------------

    def without_flags(self, pks: Iterable[int]) -> tuple["BankIndex", int]:
        """This bank minus the rows of these flags, and how many rows went.

        The result's version is what a rebuild from the remaining approved set
        gives, so no server re-embeds after an erasure.
        """
        gone = np.isin(self.flag_pk, np.fromiter(pks, dtype=np.int64))
        if not gone.any():
            return self, 0
        keep_flag = ~gone
        keep_row = keep_flag[self.row_flag]
        remap = np.cumsum(keep_flag) - 1
        public_ids = [pid for pid, keep in zip(self.flag_public_id, keep_flag.tolist(), strict=True) if keep]
        digests = self.flag_digest[keep_flag]
        index = BankIndex(
            version=bank_version(self.embedder_id, public_ids, [bytes(d) for d in digests]),
            embedder_id=self.embedder_id,
            axes=list(self.axes),
            vectors=np.ascontiguousarray(self.vectors[keep_row]),
            row_flag=remap[self.row_flag[keep_row]].astype(np.int32),
            row_region=self.row_region[keep_row],
            row_axis=self.row_axis[keep_row],
            row_side=self.row_side[keep_row],
            row_kind=self.row_kind[keep_row],
            row_weight=self.row_weight[keep_row],
            flag_pk=self.flag_pk[keep_flag],
            flag_public_id=public_ids,
            flag_digest=digests,
            flag_missing=None if self.flag_missing is None else self.flag_missing[keep_flag],
        )
        return index, int(len(keep_row) - keep_row.sum())

    # --- persistence ---------------------------------------------------------------

    def to_bytes(self) -> bytes:
        buffer = io.BytesIO()
        extra = {} if self.flag_missing is None else {"flag_missing": self.flag_missing}
        np.savez(
            buffer, **extra,
            vectors=self.vectors, row_flag=self.row_flag, row_region=self.row_region, row_axis=self.row_axis,
            row_side=self.row_side, row_kind=self.row_kind, row_weight=self.row_weight, flag_pk=self.flag_pk,
            flag_public_id=np.array(self.flag_public_id, dtype="U32"), flag_digest=self.flag_digest,
            axes=np.array(self.axes, dtype="U64"),
            meta=np.array([self.version, self.embedder_id], dtype="U128"),
        )
        return buffer.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes) -> "BankIndex":
        with np.load(io.BytesIO(bytes(data)), allow_pickle=False) as arrays:
            version, embedder_id = (str(x) for x in arrays["meta"])
            return cls(
                version=version, embedder_id=embedder_id, axes=[str(a) for a in arrays["axes"]],
                vectors=np.ascontiguousarray(arrays["vectors"], dtype=np.float32),
                row_flag=arrays["row_flag"], row_region=arrays["row_region"], row_axis=arrays["row_axis"],
                row_side=arrays["row_side"], row_kind=arrays["row_kind"], row_weight=arrays["row_weight"],
                flag_pk=arrays["flag_pk"], flag_public_id=arrays["flag_public_id"].tolist(),
                flag_digest=arrays["flag_digest"],
                flag_missing=arrays["flag_missing"] if "flag_missing" in arrays.files else None,
            )

    def flag_pks_bytes(self) -> bytes:
        return self.flag_pk.astype("<i8").tobytes()


def flag_pks_from_bytes(data: bytes) -> np.ndarray:
    return np.frombuffer(bytes(data), dtype="<i8")


def bank_flags(rows: Iterable[FlagRow], axes: Sequence[str]) -> list[FlagRow]:
    """The rows a bank of these axes holds, in the bank's order (by public id)."""
    wanted = set(axes)
    return sorted((r for r in rows if r.axis in wanted and r.region in REGIONS), key=lambda r: r.public_id)


def flag_digests(flags: Sequence[FlagRow], embedder) -> tuple[list[bytes], np.ndarray | None]:
    """What the version hashes per flag (and, for external vectors, how many of its exemplars lack one)."""
    if isinstance(embedder, ExternalVectors):
        pairs = [embedder.flag_digest(r) for r in flags]
        return [d for d, _ in pairs], np.array([m for _, m in pairs], dtype=np.int8)
    return [r.digest() for r in flags], None


def build_index(rows: Sequence[FlagRow], *, axes: Sequence[str], embedder, version: str | None = None) -> BankIndex:
    """Embed what each flag contributes and lay the rows out by (region, axis, side).

    `rows` are the approved flags whose axis is in `axes`; others are ignored.
    With `ExternalVectors` as the embedder nothing is embedded: each exemplar
    takes the detector's vector, and one without a vector is left out (counted).
    """
    axis_index = {axis: i for i, axis in enumerate(axes)}
    flags = bank_flags(rows, axes)
    digests, flag_missing = flag_digests(flags, embedder)
    if version is None:
        version = bank_version(embedder.id, [r.public_id for r in flags], digests)
    external = embedder.vectors if isinstance(embedder, ExternalVectors) else None
    region_index = {region: i for i, region in enumerate(REGIONS)}
    texts: list[str] = []
    found: list[np.ndarray] = []
    meta: list[tuple[int, int, int, int, int, float]] = []  # region, axis, side, flag, kind, weight
    for i, row in enumerate(flags):
        region, axis = region_index[row.region], axis_index[row.axis]
        for kind, text in ((KIND_FLAG, row.text), (KIND_TWIN, row.twin_text)):
            if not text.strip():
                continue
            if external is not None:
                vector = external.get(exemplar_id(row.public_id, kind, text))
                if vector is None:
                    continue  # counted in flag_missing
                found.append(vector)
            else:
                texts.append(text)
            if kind == KIND_FLAG:
                meta.append((region, axis, SIDE_BY_VERDICT[row.verdict], i, KIND_FLAG, 1.0))
            else:
                weight = 1.0 if row.weight is None else float(row.weight)
                meta.append((region, axis, BENIGN, i, KIND_TWIN, weight))
    order = sorted(range(len(meta)), key=lambda k: meta[k][:5])
    if external is not None:
        vectors = np.stack(found).astype(np.float32) if found else np.zeros((0, embedder.dim), dtype=np.float32)
    else:
        vectors = embedder.embed(texts) if texts else np.zeros((0, embedder.dim), dtype=np.float32)
    table = np.array([meta[k] for k in order], dtype=np.float64).reshape(len(order), 6)
    return BankIndex(
        version=version,
        embedder_id=embedder.id,
        axes=list(axes),
        vectors=np.ascontiguousarray(vectors[order], dtype=np.float32) if order else vectors,
        row_flag=table[:, 3].astype(np.int32),
        row_region=table[:, 0].astype(np.int8),
        row_axis=table[:, 1].astype(np.int16),
        row_side=table[:, 2].astype(np.int8),
        row_kind=table[:, 4].astype(np.int8),
        row_weight=table[:, 5].astype(np.float32),
        flag_pk=np.array([r.pk for r in flags], dtype=np.int64),
        flag_public_id=[r.public_id for r in flags],
        flag_digest=np.frombuffer(b"".join(digests), dtype=np.uint8).reshape(len(digests), 32),
        flag_missing=flag_missing,
    )
