"""Words for people: counts with the noun in the right number, keys as words."""


def count(n: int, singular: str, plural: str | None = None) -> str:
    """`count(1, "case")` is "1 case", `count(1200, "case")` "1,200 cases";
    `plural` for nouns that do not just take an s ("entry", "entries")."""
    return f"{n:,} {singular if n == 1 else (plural or singular + 's')}"


def humanise(key: str) -> str:
    """A configured key as words: `insufficient_evidence` reads "insufficient evidence".

    For keys that have no display label of their own (an application's case
    labels, a case's local verdict). Only what people read goes through it: form
    values, URLs, exports and the API keep the key itself."""
    return key.replace("_", " ")
