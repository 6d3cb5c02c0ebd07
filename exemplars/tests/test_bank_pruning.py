"""Pruned matching (a score's path on large blocks) gives exactly the matches of the
full scan: the same exemplar, the same float32 similarity, for any τ (no database)."""

import numpy as np
import pytest

from exemplars.bank import (
    KIND_FLAG,
    KIND_TWIN,
    PRUNE_MIN_ROWS,
    TOLERANCE,
    ExternalVectors,
    FlagRow,
    adjust,
    build_index,
    exemplar_id,
)

AXES = ["jailbreak", "toxicity"]
DIM = 96


def _unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=-1, keepdims=True)).astype(np.float32)


def _bank(vectors: np.ndarray, rng: np.random.Generator):
    """One flag a vector (every fifth also a weighted benign twin), jailbreak / prompt mostly."""
    rows, by_id, kinds = [], {}, []
    n_twins = 0
    for i in range(len(vectors)):
        verdict = "false_negative" if rng.random() < 0.6 else "false_positive"
        axis = "jailbreak" if i % 10 else "toxicity"
        twin = f"twin {i}" if i % 5 == 0 else ""
        weight = float(rng.choice([1.0, 0.95, 0.5, 0.0])) if twin else None
        row = FlagRow(pk=i + 1, public_id=f"fb_{i:016x}", region="prompt", axis=axis, verdict=verdict,
                      text=f"text {i}", twin_text=twin, weight=weight)
        rows.append(row)
        by_id[exemplar_id(row.public_id, KIND_FLAG, row.text)] = vectors[i]
        kinds.append((row, KIND_FLAG))
        if twin:
            # The twin points near its flag's text, as a contrastive pair does.
            near = _unit(vectors[i] + rng.normal(0, 0.25, DIM) / np.sqrt(DIM))
            by_id[exemplar_id(row.public_id, KIND_TWIN, twin)] = near
            n_twins += 1
    embedder = ExternalVectors(id=f"external/d{DIM}", dim=DIM, digests={k: b"x" for k in by_id}, vectors=by_id)
    return build_index(rows, axes=AXES, embedder=embedder)


def _queries(vectors: np.ndarray, rng: np.random.Generator) -> list[np.ndarray]:
    """Exemplars themselves, exemplars moved by a spread of distances (cosines ~0.6-1), random directions."""
    out = [vectors[i] for i in rng.choice(len(vectors), 10, replace=False)]
    for i, scale in zip(rng.choice(len(vectors), 40, replace=False), np.linspace(0.05, 1.2, 40), strict=True):
        out.append(_unit(vectors[i] + rng.normal(0, scale, DIM) / np.sqrt(DIM)))
    out += list(_unit(rng.normal(size=(10, DIM))))
    return out


def _expected(index, query, axes, floor):
    """The full scan; on a pruned (large) block a side's closest exemplar only when it reaches the floor."""
    full = index.best_matches(query, "prompt", axes)
    stats = index.stats()
    out = {}
    for axis, pair in full.items():
        block = stats[axis]["prompt"]
        large = block["danger"] + block["benign"] >= PRUNE_MIN_ROWS
        out[axis] = tuple(m if m is not None and (m.sim >= floor or not large) else None for m in pair)
    return out


@pytest.mark.parametrize("shape", ["isotropic", "low-rank"])
def test_pruned_matches_equal_the_full_scan_for_any_tau(shape):
    rng = np.random.default_rng(5)
    n = PRUNE_MIN_ROWS * 2
    if shape == "isotropic":
        vectors = _unit(rng.normal(size=(n, DIM)))
    else:  # like real embeddings: most energy in a few directions
        basis = rng.normal(size=(8, DIM))
        vectors = _unit(rng.normal(size=(n, 8)) @ basis + rng.normal(0, 0.3, size=(n, DIM)))
    index = _bank(vectors, rng)
    blocks = index.stats()["jailbreak"]["prompt"]
    assert blocks["danger"] >= PRUNE_MIN_ROWS and blocks["benign"] > 0  # the large block is pruned
    matched = 0
    for query in _queries(vectors, rng):
        for tau in (0.99, 0.92, 0.88, 0.7, 0.3):
            floor = tau - TOLERANCE
            pruned = index.best_matches(query, "prompt", AXES, floor)
            assert pruned == _expected(index, query, AXES, floor)
            for axis in AXES:
                full = index.best_matches(query, "prompt", [axis])[axis]
                assert adjust(0.4, 0.5, *pruned[axis], tau).p == adjust(0.4, 0.5, *full, tau).p
            matched += sum(m is not None for pair in pruned.values() for m in pair)
    assert index._sketch is not None  # the pruned path ran
    assert matched > 100  # and found matches on both sides of τ's range


def test_the_twin_weight_bounds_a_benign_match():
    """A twin of weight 0.5 identical to the query reaches 0.5, never τ = 0.88: no match."""
    rng = np.random.default_rng(9)
    vectors = _unit(rng.normal(size=(PRUNE_MIN_ROWS * 2, DIM)))
    index = _bank(vectors, rng)
    for tau in (0.88, 0.5, 0.45):
        floor = tau - TOLERANCE
        for i in range(0, 400, 5):
            query = vectors[i]
            assert index.best_matches(query, "prompt", AXES, floor) == _expected(index, query, AXES, floor)


def test_small_blocks_keep_the_closest_exemplars_below_tau():
    rng = np.random.default_rng(3)
    vectors = _unit(rng.normal(size=(200, DIM)))
    index = _bank(vectors, rng)
    query = _unit(rng.normal(size=DIM))
    danger, benign = index.best_matches(query, "prompt", ["jailbreak"], 0.88)["jailbreak"]
    assert danger is not None and danger.sim < 0.88  # for the screen, as before
    assert index._sketch is None
