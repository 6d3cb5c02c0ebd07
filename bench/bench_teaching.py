"""Teaching: the replay-equivalence gate and the accept path as the corpus grows.

Figures: p95 of `proposal_create` (eligibility, the gate: two lane runs over an
in-memory view of the corpus, the proposal and its events), p95 of an accept
(fresh gate run, decision, corpus append, event), and the reference: p95 of just
loading the active corpus and eval cases into memory, measured in the same run.

    python -m bench teaching                      # SQLite, 5,000 entries, 1,000 cases
    TEACHING_BENCH_ROWS=50000 python -m bench teaching
    TEACHING_BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench_teaching python -m bench teaching
"""

import os
import time

from bench.common import p95, setup_django

ROWS = int(os.environ.get("TEACHING_BENCH_ROWS", "5000"))
CASES = max(10, ROWS // 5)
PROPOSALS = int(os.environ.get("TEACHING_BENCH_PROPOSALS", "40"))


def main() -> None:
    setup_django(os.environ.get("TEACHING_BENCH_DATABASE_URL"))
    from django.db import connection

    from consoles.models import Application, Membership, Role
    from consoles.tests.factories import UserFactory
    from teaching import selectors
    from teaching.domain import run_lanes
    from teaching.models import Candidate, CorpusEntry, EvalCase
    from teaching.services import Actor, proposal_create, proposal_decide

    app = Application.objects.create(slug=f"bench-teaching-{int(time.time())}", name="Bench teaching")
    operator = UserFactory(username=f"bench-op-{app.pk}")
    Membership.objects.create(user=operator, application=app, role=Role.CURATOR)
    splits = ("public", "dev", "holdout")
    CorpusEntry.objects.bulk_create(
        CorpusEntry(application=app, subject=f"s{i}", intent="capital_of", connective="is", object=f"o{i}",
                    polarity="affirms", claim_domain="factual", source="seed")
        for i in range(ROWS)
    )
    # Cases: most answered by the corpus, some gaps that candidates fill.
    EvalCase.objects.bulk_create(
        EvalCase(application=app, case_id=f"e{i}", split=splits[i % 3],
                 subject=f"s{i * 3}" if i % 4 else f"gap{i}", intent="capital_of",
                 expected_object=f"o{i * 3}" if i % 4 else f"g{i}", expected_polarity="affirms")
        for i in range(CASES)
    )
    Candidate.objects.bulk_create(
        Candidate(application=app, candidate_id=f"c{i}", subject=f"gap{i * 4}", intent="capital_of", connective="is",
                  object=f"g{i * 4}", polarity="affirms", claim_domain="factual",
                  evidence=[{"source": "corpus", "ref": "x"}], boundary_clean=True, actor_kind="system")
        for i in range(PROPOSALS)
    )
    print(f"database: {connection.vendor}; corpus {ROWS} entries, {CASES} eval cases, {PROPOSALS} proposals")

    load_times = []
    for _ in range(PROPOSALS):
        start = time.perf_counter()
        corpus = selectors.corpus_active_chains(application=app)
        cases = selectors.eval_case_facts(application=app)
        load_times.append(time.perf_counter() - start)
    lane_times = []
    for _ in range(10):
        start = time.perf_counter()
        run_lanes(corpus, cases)
        lane_times.append(time.perf_counter() - start)

    propose_times, proposals = [], []
    for i in range(PROPOSALS):
        start = time.perf_counter()
        proposal, _ = proposal_create(application=app, candidate_id=f"c{i}", actor=Actor.system())
        propose_times.append(time.perf_counter() - start)
        proposals.append(proposal)
    pending = [p for p in proposals if p.state == "pending"]
    accept_times = []
    for proposal in pending[: max(1, len(pending) // 2)]:
        start = time.perf_counter()
        proposal_decide(application=app, proposal_id=proposal.proposal_id, decision="accept", operator=operator)
        accept_times.append(time.perf_counter() - start)

    ref = p95(load_times)
    print(f"reference: load active corpus + eval cases  p95 {ref * 1000:8.1f} ms")
    print(f"one lane run (all lanes, in memory)         p95 {p95(lane_times) * 1000:8.1f} ms")
    print(f"propose (gates + replay gate + writes)      p95 {p95(propose_times) * 1000:8.1f} ms"
          f"  ({p95(propose_times) / ref:.1f}x reference)")
    print(f"accept (fresh gate + decision + append)     p95 {p95(accept_times) * 1000:8.1f} ms"
          f"  ({p95(accept_times) / ref:.1f}x reference)")
    print(f"pending after the gate: {len(pending)} of {PROPOSALS}; accepted {len(accept_times)}")


if __name__ == "__main__":
    main()
