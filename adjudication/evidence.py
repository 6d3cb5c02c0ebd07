"""The evidence vocabulary shared by the pure modules (families, fusion, gaps).

Plain Python: no ORM import, so the algorithms are tested without a database and
the sampling app can reuse them on records it builds itself.
"""

from dataclasses import dataclass, field
from datetime import datetime

SUPPORTS = "supports"
CONTRADICTS = "contradicts"
RELATIONS: tuple[str, ...] = (SUPPORTS, CONTRADICTS)

HOST_OBSERVED = "host_observed"
AGENT_ADJACENT = "agent_adjacent"
MODEL_INTERNAL = "model_internal"
INDEPENDENT_EXTERNAL = "independent_external"
HUMAN_REVIEWED = "human_reviewed"
TRUST_CLASSES: tuple[str, ...] = (
    HOST_OBSERVED,
    AGENT_ADJACENT,
    MODEL_INTERNAL,
    INDEPENDENT_EXTERNAL,
    HUMAN_REVIEWED,
)

# The agent-reported channel: records the agent (or the model) itself produced
# about one of its own turns. Several sensors reading the same agent event are
# one source, not several; host sensors observing the same event independently
# are not (seed 002: collapsing them would under-count the best evidence).
AGENT_CHANNEL: frozenset[str] = frozenset({AGENT_ADJACENT, MODEL_INTERNAL})

# Independent of the agent: a host observation, an external system, a human.
STRONG_TRUST: frozenset[str] = frozenset({HOST_OBSERVED, INDEPENDENT_EXTERNAL, HUMAN_REVIEWED})

TRUST_LABELS: dict[str, str] = {
    HOST_OBSERVED: "host-observed",
    AGENT_ADJACENT: "agent-adjacent",
    MODEL_INTERNAL: "model-internal",
    INDEPENDENT_EXTERNAL: "independent-external",
    HUMAN_REVIEWED: "human-reviewed",
}


@dataclass(frozen=True)
class EvidenceRecord:
    evidence_id: str
    relation: str
    trust_class: str
    source_event_id: str | None = None
    correlation_group: str | None = None
    derived_from: tuple[str, ...] = field(default_factory=tuple)
    sensor: str = ""
    observed_at: datetime | None = None

    def __post_init__(self) -> None:
        if self.relation not in RELATIONS:
            raise ValueError(f"relation must be one of {RELATIONS}, not {self.relation!r}")
        if self.trust_class not in TRUST_CLASSES:
            raise ValueError(f"trust_class must be one of {TRUST_CLASSES}, not {self.trust_class!r}")
        # A list passed by a caller would make the record unhashable.
        object.__setattr__(self, "derived_from", tuple(self.derived_from))

    @property
    def provenance_known(self) -> bool:
        """Whether anything records where this record came from."""
        return bool(self.source_event_id or self.correlation_group or self.derived_from)
