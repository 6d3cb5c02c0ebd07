"""Case labels and how a gold label compares with the pipeline's local verdict.

The sampling app asks "does the human ground truth disagree with what the system
concluded?". A gold label *affirms* the claim (reliable) or *denies* it
(unreliable, contradicted), or says the evidence cannot decide
(insufficient_evidence). A local verdict affirms the claim (the pipeline's
positive bands: verified, corroborated, qualified, and plain pass/holds words) or
denies it (refuted, contradicted, fail, ...).

label_disagrees_with_verdict is True when:
- the label denies the claim and the verdict affirms it, or the other way round;
- the label is insufficient_evidence and the verdict affirms the claim (the
  system asserted more than the evidence bears).
Anything unknown on either side (a custom label, an unfamiliar verdict word) is
NOT reported as a disagreement: a comparison we cannot make is no signal.
"""

RELIABLE = "reliable"
UNRELIABLE = "unreliable"
CONTRADICTED = "contradicted"
INSUFFICIENT_EVIDENCE = "insufficient_evidence"

AFFIRMING_LABELS = frozenset({RELIABLE})
DENYING_LABELS = frozenset({UNRELIABLE, CONTRADICTED})
UNDECIDED_LABELS = frozenset({INSUFFICIENT_EVIDENCE})

AFFIRMING_VERDICTS = frozenset(
    {"verified", "corroborated", "qualified", "holds", "pass", "passed", "proceed", "supported", "true", "reliable"}
)
DENYING_VERDICTS = frozenset(
    {"refuted", "contradicted", "fail", "failed", "block", "blocked", "false", "unreliable", "rejected"}
)


def _norm(value: str) -> str:
    return value.strip().lower().replace("-", "_").replace(" ", "_")


def verdict_stance(local_verdict: str) -> str | None:
    """'affirms', 'denies' or None (unknown) for a pipeline verdict word."""
    v = _norm(local_verdict)
    if v in AFFIRMING_VERDICTS:
        return "affirms"
    if v in DENYING_VERDICTS:
        return "denies"
    return None


def label_disagrees_with_verdict(label: str, local_verdict: str) -> bool:
    stance = verdict_stance(local_verdict)
    if stance is None:
        return False
    lab = _norm(label)
    if lab in AFFIRMING_LABELS:
        return stance == "denies"
    if lab in DENYING_LABELS:
        return stance == "affirms"
    if lab in UNDECIDED_LABELS:
        return stance == "affirms"
    return False
