"""Words for people: counts with the noun in the right number."""


def count(n: int, singular: str, plural: str | None = None) -> str:
    """`count(1, "case")` is "1 case", `count(1200, "case")` "1,200 cases";
    `plural` for nouns that do not just take an s ("entry", "entries")."""
    return f"{n:,} {singular if n == 1 else (plural or singular + 's')}"
