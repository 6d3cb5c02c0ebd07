"""Extension points the domain apps fill in from their AppConfig.ready().

`consoles` owns the layout but no domain logic, and nothing in it imports the
domain apps: each app registers what it shows on an application's home page,
what it adds to the demo data, and which of an application's keys (axes,
problems, labels) its rows use.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    # For the annotations only: this module imports nothing of the models at run
    # time, so the models (and anything they load) may import it freely.
    from .models import Application


@dataclass(frozen=True)
class HomeCard:
    title: str
    count: int
    caption: str
    url: str


HomeCardProvider = Callable[["Application"], list[HomeCard]]
DemoLoader = Callable[..., None]
# (application, vocabulary field, keys) -> {key: what uses it}, for the keys its rows use.
VocabularyUse = Callable[["Application", str, set[str]], dict[str, str]]

_home_card_providers: list[tuple[int, HomeCardProvider]] = []
_demo_loaders: list[tuple[int, DemoLoader]] = []
_vocabulary_uses: list[VocabularyUse] = []


def register_home_cards(provider: HomeCardProvider, *, order: int = 100) -> None:
    if all(p is not provider for _, p in _home_card_providers):
        _home_card_providers.append((order, provider))


def register_demo_loader(loader: DemoLoader, *, order: int = 100) -> None:
    """`loader(application=..., users={"curator": user, ...})`; must be idempotent."""
    if all(p is not loader for _, p in _demo_loaders):
        _demo_loaders.append((order, loader))


def home_cards(application: Application) -> list[HomeCard]:
    cards: list[HomeCard] = []
    for _, provider in sorted(_home_card_providers, key=lambda item: item[0]):
        cards.extend(provider(application))
    return cards


def demo_loaders() -> list[DemoLoader]:
    return [loader for _, loader in sorted(_demo_loaders, key=lambda item: item[0])]


def register_vocabulary_use(use: VocabularyUse) -> None:
    if all(u is not use for u in _vocabulary_uses):
        _vocabulary_uses.append(use)


def vocabulary_in_use(application: Application, field: str, keys: set[str]) -> dict[str, list[str]]:
    """Which of `keys` (of the application's `field`: axes, problems, capture_labels
    or case_labels) stored rows use: key -> what uses it ("flags", "case labels")."""
    found: dict[str, list[str]] = {}
    if keys:
        for use in _vocabulary_uses:
            for key, what in use(application, field, keys).items():
                found.setdefault(key, []).append(what)
    return found
