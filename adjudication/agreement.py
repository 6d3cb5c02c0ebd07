"""Reviewer agreement: Cohen's kappa over double-labelled cases. Plain Python.

Input is every label as (case, reviewer, label, order); a case counts once it has
labels from two or more reviewers. For the overall figure, each such case gives
ONE rating pair: its first two labels in submission order (first rater, second
rater), so n is exactly the number of double-labelled cases and no case weighs
more because three people labelled it. Per-pair figures use, for each pair of
reviewers, every case both labelled (rater A = the name that sorts first).

Kappa is only reported from MIN_KAPPA_CASES cases: below that it is too noisy to
act on (seed 000), and the page says "not enough data (n/20)".
"""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import combinations

MIN_KAPPA_CASES = 20


@dataclass(frozen=True)
class LabelEvent:
    case: object  # any hashable case key
    reviewer: str
    label: str
    order: object  # sortable: submission time, or a sequence number


@dataclass(frozen=True)
class Kappa:
    n: int
    observed: float  # observed agreement p_o
    expected: float  # chance agreement p_e
    kappa: float | None  # None when p_e == 1 and raters do not agree perfectly


def cohen_kappa(pairs: Sequence[tuple[str, str]]) -> Kappa:
    """Cohen's kappa of (rater A label, rater B label) pairs."""
    n = len(pairs)
    if n == 0:
        return Kappa(n=0, observed=0.0, expected=0.0, kappa=None)
    agree = sum(1 for a, b in pairs if a == b)
    count_a: dict[str, int] = {}
    count_b: dict[str, int] = {}
    for a, b in pairs:
        count_a[a] = count_a.get(a, 0) + 1
        count_b[b] = count_b.get(b, 0) + 1
    p_o = agree / n
    p_e = sum(count_a[k] * count_b.get(k, 0) for k in count_a) / (n * n)
    if p_e == 1.0:
        # Both raters used one single label throughout: kappa is undefined
        # unless they agree everywhere (then agreement is trivially perfect).
        return Kappa(n=n, observed=p_o, expected=p_e, kappa=1.0 if p_o == 1.0 else None)
    return Kappa(n=n, observed=p_o, expected=p_e, kappa=(p_o - p_e) / (1 - p_e))


def confusion_matrix(pairs: Sequence[tuple[str, str]], labels: Sequence[str]) -> list[list[int]]:
    """rows: first rater's label, columns: second rater's label, in `labels` order
    (labels seen in pairs but missing from `labels` are appended)."""
    order = list(labels) + sorted({x for p in pairs for x in p} - set(labels))
    index = {label: i for i, label in enumerate(order)}
    matrix = [[0] * len(order) for _ in order]
    for a, b in pairs:
        matrix[index[a]][index[b]] += 1
    return matrix


def matrix_labels(pairs: Sequence[tuple[str, str]], labels: Sequence[str]) -> list[str]:
    return list(labels) + sorted({x for p in pairs for x in p} - set(labels))


@dataclass(frozen=True)
class PairFigure:
    reviewer_a: str
    reviewer_b: str
    n: int
    observed: float
    kappa: float | None  # None below MIN_KAPPA_CASES or when undefined
    enough: bool


@dataclass(frozen=True)
class Agreement:
    n: int  # double-labelled cases
    enough: bool
    overall: Kappa | None  # None until n >= MIN_KAPPA_CASES
    labels: list[str]
    matrix: list[list[int]]
    pairs: list[PairFigure]
    minimum: int = MIN_KAPPA_CASES

    @property
    def gate_message(self) -> str:
        return f"not enough data ({self.n}/{self.minimum})"


def agreement(events: Iterable[LabelEvent], *, labels: Sequence[str] = ()) -> Agreement:
    by_case: dict[object, list[LabelEvent]] = {}
    for event in events:
        by_case.setdefault(event.case, []).append(event)

    first_pairs: list[tuple[str, str]] = []
    per_pair: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for case_events in by_case.values():
        latest: dict[str, LabelEvent] = {}
        for event in sorted(case_events, key=lambda e: e.order):
            # One label per reviewer per case; if a source repeats, the first stands.
            latest.setdefault(event.reviewer, event)
        ordered = sorted(latest.values(), key=lambda e: e.order)
        if len(ordered) < 2:
            continue
        first_pairs.append((ordered[0].label, ordered[1].label))
        for x, y in combinations(sorted(ordered, key=lambda e: e.reviewer), 2):
            per_pair.setdefault((x.reviewer, y.reviewer), []).append((x.label, y.label))

    n = len(first_pairs)
    enough = n >= MIN_KAPPA_CASES
    pair_figures = []
    for (a, b), pairs in sorted(per_pair.items()):
        k = cohen_kappa(pairs)
        pair_enough = k.n >= MIN_KAPPA_CASES
        pair_figures.append(
            PairFigure(
                reviewer_a=a,
                reviewer_b=b,
                n=k.n,
                observed=k.observed,
                kappa=k.kappa if pair_enough else None,
                enough=pair_enough,
            )
        )
    return Agreement(
        n=n,
        enough=enough,
        overall=cohen_kappa(first_pairs) if enough else None,
        labels=matrix_labels(first_pairs, labels),
        matrix=confusion_matrix(first_pairs, labels),
        pairs=pair_figures,
    )
