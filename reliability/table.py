"""One table of figures: check | database | figure | target | pass."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Row:
    check: str
    database: str
    figure: str
    target: str
    passed: bool


HEADER = ("check", "database", "figure", "target", "pass")


def _cells(row: Row) -> tuple[str, ...]:
    return (row.check, row.database, row.figure, row.target, "PASS" if row.passed else "FAIL")


def text_table(rows: list[Row]) -> str:
    cells = [HEADER, *(_cells(r) for r in rows)]
    widths = [max(len(c[i]) for c in cells) for i in range(len(HEADER))]
    lines = ["  ".join(c[i].ljust(widths[i]) for i in range(len(HEADER))).rstrip() for c in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def markdown_table(rows: list[Row]) -> str:
    def line(cells: tuple[str, ...]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

    return "\n".join([line(HEADER), line(tuple("---" for _ in HEADER)), *(line(_cells(r)) for r in rows)])
