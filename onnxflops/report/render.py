"""Tables as text: every table the tool prints, aligned or in Markdown, is drawn here."""

from __future__ import annotations


def text_table(header: list[str] | None, rows: list[list[str]], left: int = 2, *,
               note: bool = False, rules: bool = False) -> list[str]:
    """Aligned lines: the first `left` columns (and, with `note`, the last) left, numbers right.

    `rules`: a dashed line under the header and another after the last row.
    """
    table = [header, *rows] if header is not None else rows
    if not table:
        return []
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
    last = len(widths) - 1

    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) if i < left or (note and i == last) else c.rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    rule = "  ".join("-" * w for w in widths)
    if header is None:
        return [line(r) for r in rows]
    if rules:
        return [line(header), rule, *(line(r) for r in rows), rule]
    return [line(r) for r in table]


def markdown_table(header: list[str], rows: list[list[str]], left: int = 2) -> list[str]:
    """Lines of a Markdown table, the first `left` columns left-aligned, numbers right-aligned."""
    return ["| " + " | ".join(header) + " |",
            "|" + "|".join("---" if i < left else "---:" for i in range(len(header))) + "|",
            *("| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows)]
