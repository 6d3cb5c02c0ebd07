"""Demo data for `make run` (idempotent): a small corpus, eval cases in the three
splits, candidates (eligible and not) and proposals in every state: pending,
accepted, rejected by an operator, auto-rejected by the replay gate (a
regression) and withdrawn."""

from consoles.models import Application

from .models import CorpusEntry, ProposalState
from .services import (
    Actor,
    candidate_submit,
    corpus_seed,
    eval_cases_import,
    proposal_create,
    proposal_decide,
)

SEED_CORPUS = [
    {"subject": "paris", "intent": "capital_of", "connective": "is", "object": "france", "polarity": "affirms"},
    {"subject": "rome", "intent": "capital_of", "connective": "is", "object": "italy", "polarity": "affirms"},
    {"subject": "whale", "intent": "is_a", "connective": "is", "object": "fish", "polarity": "falsifies"},
]
EVAL_CASES = [
    ("e-paris", "public", "paris", "capital_of", "france", "affirms"),
    ("e-rome", "public", "rome", "capital_of", "italy", "affirms"),
    ("e-tokyo", "dev", "tokyo", "capital_of", "japan", "affirms"),
    ("e-whale", "dev", "whale", "is_a", "fish", "falsifies"),
    ("e-berlin", "holdout", "berlin", "capital_of", "germany", "affirms"),
    ("e-oslo", "holdout", "oslo", "capital_of", "norway", "affirms"),
]


def _candidate(candidate_id: str, subject: str, obj: str, **overrides) -> dict:
    record = {
        "candidate_id": candidate_id,
        "proposed_chain": {"subject": subject, "intent": "capital_of", "connective": "is", "object": obj},
        "polarity": "affirms",
        "claim_domain": "factual",
        "evidence": [{"source": "corpus", "ref": f"atlas:{subject}"}],
        "boundary_clean": True,
        "hedge": None,
    }
    record.update(overrides)
    return record


CANDIDATES = [
    _candidate("disc-tokyo", "tokyo", "japan"),  # fills a dev gap: stays pending
    _candidate("disc-oslo", "oslo", "norway"),  # fills a holdout gap: stays pending
    _candidate("disc-berlin", "berlin", "germany"),  # accepted by the demo curator
    _candidate("disc-paris-lyon", "paris", "lyon"),  # contradicts paris: auto-rejected
    _candidate("disc-madrid", "madrid", "spain"),  # rejected by the demo curator
    _candidate("disc-cairo", "cairo", "egypt"),  # withdrawn by the demo curator
    _candidate("disc-vague", "lisbon", "portugal", polarity="undetermined"),  # ineligible
    _candidate(
        "disc-taste",
        "lisbon",
        "best city",
        claim_domain="evaluative",
        evidence=[{"source": "conversation", "ref": "turn:88"}],
    ),  # ineligible: evaluative without flag, no corpus evidence
]


def load_demo(*, application: Application, users: dict) -> None:
    actor = Actor.system()
    if not CorpusEntry.objects.filter(application=application).exists():
        corpus_seed(application=application, chains=SEED_CORPUS)
    keys = ("case_id", "split", "subject", "intent", "expected_object", "expected_polarity")
    eval_cases_import(
        application=application, records=[(i, dict(zip(keys, row, strict=True))) for i, row in enumerate(EVAL_CASES, 1)]
    )
    for record in CANDIDATES:
        candidate_submit(application=application, data=record, actor=actor)
    proposals = {}
    for candidate_id in ("disc-tokyo", "disc-oslo", "disc-paris-lyon", "disc-berlin", "disc-madrid", "disc-cairo"):
        proposals[candidate_id], _ = proposal_create(application=application, candidate_id=candidate_id, actor=actor)
    operator = users["curator"]
    for candidate_id, decision, note in (
        ("disc-berlin", "accept", "Checked against the atlas."),
        ("disc-madrid", "reject", "Source turn was a quiz answer, not a claim."),
        ("disc-cairo", "withdraw", "Duplicate of an entry under review elsewhere."),
    ):
        if proposals[candidate_id].state == ProposalState.PENDING:
            proposal_decide(
                application=application,
                proposal_id=proposals[candidate_id].proposal_id,
                decision=decision,
                operator=operator,
                note=note,
            )
