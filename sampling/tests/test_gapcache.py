"""The shape cache must give exactly derive_gaps' answer, pool by pool."""

import random

from adjudication.evidence import RELATIONS, TRUST_CLASSES, EvidenceRecord
from adjudication.gaps import derive_gaps
from sampling.gapcache import GapCache, gaps_by_case, pool_shape


def random_pool(rng: random.Random) -> list[tuple]:
    """Up to 6 records with ids, events, groups and derivations that collide often."""
    size = rng.randrange(7)
    ids = rng.sample([f"ev-{rng.randrange(1000)}" for _ in range(20)], size)
    pool = []
    for evidence_id in ids:
        derived = tuple(rng.sample(ids + ["missing-a", "missing-b"], rng.randrange(3))) if rng.random() < 0.3 else ()
        pool.append((
            evidence_id,
            rng.choice(RELATIONS),
            rng.choice(TRUST_CLASSES),
            rng.choice([None, f"evt-{rng.randrange(3)}", f"evt-{rng.randrange(3)}"]),
            rng.choice([None, None, f"grp-{rng.randrange(2)}"]),
            tuple(d for d in derived if d != evidence_id),
        ))
    return pool


def direct(pool: list[tuple]) -> frozenset[str]:
    return derive_gaps(
        EvidenceRecord(evidence_id=i, relation=r, trust_class=t, source_event_id=e,
                       correlation_group=g, derived_from=d, sensor=f"sensor-{i}")
        for i, r, t, e, g, d in pool
    )


def test_cached_gaps_equal_derive_gaps_on_thousands_of_random_pools():
    rng = random.Random(20261130)
    cache = GapCache()
    pools = [random_pool(rng) for _ in range(5000)]
    for pool in pools:
        assert cache.gaps(pool) == direct(pool), pool
    assert cache.shapes < len(pools)  # shapes repeat, which is the point
    # and a second pass served from the cache still agrees
    for pool in pools[:500]:
        assert cache.gaps(pool) == direct(pool)


def test_renaming_keeps_the_order_of_ids_that_fusion_breaks_ties_with():
    a = [("b", "supports", "host_observed", None, None, ()), ("a", "supports", "host_observed", "x", None, ())]
    b = [("z", "supports", "host_observed", None, None, ()), ("y", "supports", "host_observed", "q", None, ())]
    c = [("a", "supports", "host_observed", None, None, ()), ("b", "supports", "host_observed", "x", None, ())]
    assert pool_shape(a) == pool_shape(b)
    assert pool_shape(a) != pool_shape(c)


def test_gaps_by_case_groups_rows_by_case_and_decodes_derivations():
    rows = [
        (1, "e1", "supports", "agent_adjacent", "evt", "", "[]"),
        (1, "e2", "contradicts", "host_observed", "", "", '["e1"]'),
        (2, "e1", "supports", "model_internal", "", "", "[]"),
    ]
    result = gaps_by_case(rows)
    assert result[1] == direct([("e1", "supports", "agent_adjacent", "evt", None, ()),
                                ("e2", "contradicts", "host_observed", None, None, ("e1",))])
    assert result[2] == frozenset({"all_votes_discounted"})
    assert 3 not in result


def test_pools_differing_only_in_record_order_share_a_shape():
    pool = [("b", "supports", "agent_adjacent", "x", None, ()), ("a", "contradicts", "host_observed", "y", "g", ("b",))]
    assert pool_shape(pool) == pool_shape(list(reversed(pool)))
    assert GapCache().gaps(pool) == direct(pool) == direct(list(reversed(pool)))
