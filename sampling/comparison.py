"""Does the policy beat random sampling? Pure Python, tested without a database.

The question (seed 000's evaluation): among cases that already have a gold
label, does the policy's top K contain more cases where the human's gold label
disagrees with the local verdict (the cases where a human changed the answer)
than K cases drawn at random? The policy's share is set against R seeded
random draws of the same size: their mean and 95% interval.

Below `MIN_GOLD_LABELS` gold-labelled cases nothing is computed: a share over
a handful of labels would be noise presented as a measurement.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

from .policy import DEFAULT_MAX_PER_PATTERN, CaseInput, make_plan

MIN_GOLD_LABELS = 20
DEFAULT_DRAWS = 1000
MAX_DRAWS = 100_000
MAX_SEED = 2**31 - 1


@dataclass(frozen=True, slots=True)
class LabelledCase:
    case: CaseInput
    # Whether the case's current gold label disagrees with its local verdict.
    disagrees: bool


@dataclass(frozen=True)
class Comparison:
    labelled_count: int
    budget: int
    seed: int
    draws: int
    max_per_pattern: int
    enough: bool
    selected_count: int = 0
    policy_hits: int = 0
    policy_share: float | None = None
    base_rate: float | None = None
    random_mean: float | None = None
    random_low: float | None = None
    random_high: float | None = None
    # Share of random draws that did at least as well as the policy.
    draws_at_least_policy: float | None = None

    @property
    def message(self) -> str:
        if not self.enough:
            return f"not enough gold labels ({self.labelled_count}/{MIN_GOLD_LABELS})"
        figures = (
            f"policy {self.policy_share:.3f} vs random mean {self.random_mean:.3f} "
            f"(95% interval {self.random_low:.3f}–{self.random_high:.3f})"
        )
        if self.policy_share > self.random_high:
            verdict = "the policy finds more human-changed answers than random draws"
        elif self.policy_share < self.random_low:
            verdict = "the policy finds fewer human-changed answers than random draws"
        else:
            verdict = "the policy is within the range of random draws"
        return f"{verdict}: {figures}"

    def as_dict(self) -> dict:
        return {
            "labelled_count": self.labelled_count,
            "min_gold_labels": MIN_GOLD_LABELS,
            "enough": self.enough,
            "budget": self.budget,
            "seed": self.seed,
            "draws": self.draws,
            "max_per_pattern": self.max_per_pattern,
            "selected_count": self.selected_count,
            "policy_hits": self.policy_hits,
            "policy_share": _rounded(self.policy_share),
            "base_rate": _rounded(self.base_rate),
            "random_mean": _rounded(self.random_mean),
            "random_low": _rounded(self.random_low),
            "random_high": _rounded(self.random_high),
            "draws_at_least_policy": _rounded(self.draws_at_least_policy),
            "message": self.message,
        }


def _rounded(value: float | None) -> float | None:
    # Rounded so that the JSON output is the same on every platform.
    return None if value is None else round(value, 6)


def quantile(sorted_values: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default), on sorted input."""
    if not sorted_values:
        raise ValueError("no values")
    position = q * (len(sorted_values) - 1)
    low = math.floor(position)
    high = min(low + 1, len(sorted_values) - 1)
    fraction = position - low
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * fraction


def compare(
    labelled: Sequence[LabelledCase],
    *,
    budget: int,
    seed: int,
    draws: int = DEFAULT_DRAWS,
    max_per_pattern: int = DEFAULT_MAX_PER_PATTERN,
) -> Comparison:
    """The policy's top `budget` among `labelled` against `draws` random draws."""
    if budget < 1:
        raise ValueError("budget must be at least 1")
    if not 1 <= draws <= MAX_DRAWS:
        raise ValueError(f"draws must be between 1 and {MAX_DRAWS}")
    n = len(labelled)
    base = Comparison(
        labelled_count=n,
        budget=budget,
        seed=seed,
        draws=draws,
        max_per_pattern=max_per_pattern,
        enough=n >= MIN_GOLD_LABELS,
    )
    if not base.enough:
        return base
    if budget >= n:
        raise ValueError(
            f"budget must be smaller than the {n} gold-labelled cases, "
            "otherwise the policy and every random draw pick the same cases"
        )

    # Sorted by case id so the random draws do not depend on the input order.
    ordered = sorted(labelled, key=lambda item: item.case.case_id)
    disagrees = {item.case.case_id: item.disagrees for item in ordered}
    plan = make_plan([item.case for item in ordered], budget=budget, max_per_pattern=max_per_pattern)
    k = len(plan.selections)
    hits = sum(disagrees[s.case_id] for s in plan.selections)
    policy_share = hits / k

    # Random draws of the same size as the policy's selection (the cap can make
    # it smaller than the budget), so both shares are over the same count.
    flags = [item.disagrees for item in ordered]
    rng = random.Random(seed)
    shares = sorted(sum(flags[i] for i in rng.sample(range(n), k)) / k for _ in range(draws))
    at_least = sum(1 for share in shares if share >= policy_share)
    return Comparison(
        labelled_count=n,
        budget=budget,
        seed=seed,
        draws=draws,
        max_per_pattern=max_per_pattern,
        enough=True,
        selected_count=k,
        policy_hits=hits,
        policy_share=policy_share,
        base_rate=sum(flags) / n,
        random_mean=math.fsum(shares) / draws,
        random_low=quantile(shares, 0.025),
        random_high=quantile(shares, 0.975),
        draws_at_least_policy=at_least / draws,
    )
