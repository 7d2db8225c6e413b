"""Every output format of every result, in one place: aligned text, Markdown, HTML, JSON, CSV, and
a pandas DataFrame.

A result (the count's Report, a Profile, a Comparison, an LlmReport) says what it holds, never how
it is written:

- `to_dict()`: the JSON document;
- `rows(by=...)`: one dict per row, for CSV and pandas (a field added to the rows reaches both);
- `view(...)`: what a person reads, a list of blocks: lines of text and `Table`s (text, Markdown,
  HTML).

`write(result, fmt, **options)` writes any result in any of `names()`. A new format is one function
here, decorated with `@output(name)`: every command then offers `--name [FILE]` (commands/common.py).
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass, field
from html import escape
from typing import Any, Callable

# The format a command prints when no format option is given.
DEFAULT = "table"
# Text tables are fitted to this many columns by eliding long names in the middle.
WIDTH = 120
_ELLIPSIS = "…"
# A name is never elided below this many characters, however wide the other columns.
_NARROWEST = 16


@dataclass(frozen=True)
class Writer:
    """An output format: `write(result, **options)` gives its text; `reads` says which options
    shape it ("view": the table's, "rows": the rows', "document": none, the whole to_dict());
    `page`: a document of its own, written to a FILE named (never in place of the table);
    `describes`: what it writes, for the options' help ({rows}: what a row is; {page}: what the
    page holds); `suffix`: the file suffix it is told by (`survey -o FILE`)."""
    write: Callable[..., str]
    reads: str
    page: bool
    describes: str
    suffix: str


_WRITERS: dict[str, Writer] = {}


def output(name: str, describes: str, reads: str = "view", page: bool = False,
           suffix: str | None = None):
    """Make the decorated function (result, **options) → str the output format `name`, told in a
    file name by `suffix` (default `.name`)."""
    def register(write: Callable[..., str]) -> Callable[..., str]:
        _WRITERS[name] = Writer(write, reads, page, describes, suffix or f".{name}")
        return write
    return register


def names() -> tuple[str, ...]:
    """Every output format, the default first."""
    return tuple(_WRITERS)


def writer(fmt: str) -> Writer:
    return _WRITERS[fmt]


def by_suffix(suffix: str) -> str | None:
    """The format a file name ending in `suffix` asks for (case ignored); None: no format's."""
    return next((name for name, found in _WRITERS.items()
                 if found.suffix == suffix.lower()), None)


@dataclass
class Table:
    """A table as a person reads it: cells already formatted.

    `left`: the first `left` columns are text (left-aligned), the rest numbers (right-aligned);
    `note`: the last column is text too; `rules`: a dashed line under the header and after the
    last row (`closing_rule=False`: under the header only); `widths`, `gap`: fixed column widths
    and the space between columns, for tables laid out by hand.
    """
    header: list[str] | None
    rows: list[list[str]]
    left: int = 2
    note: bool = False
    rules: bool = False
    closing_rule: bool = True
    widths: list[int] | None = None
    gap: str = "  "


@dataclass
class Text:
    """Lines of prose; in Markdown, `hard_breaks` keeps each on its own line (two trailing
    spaces)."""
    lines: list[str]
    hard_breaks: bool = False


class Rows(list):
    """A result's rows: a list of dicts, one per row, that knows its columns even when empty.

    `columns` come first in the order given, then every other key the records hold (a field a
    result gains reaches CSV and pandas with no edit here), but those `hidden`.
    """

    def __init__(self, columns: list[str], rows: list[dict[str, Any]],
                 hidden: tuple[str, ...] = ()):
        super().__init__(rows)
        self.columns = list(columns)
        known = set(self.columns) | set(hidden)
        for row in rows:
            for key in row:
                if key not in known:
                    known.add(key)
                    self.columns.append(key)


@dataclass
class _Fitted:
    widths: list[int]
    cut: dict[int, int] = field(default_factory=dict)  # column → the width its cells are cut to


# --- text ------------------------------------------------------------------------------------

def text_table(header: list[str] | None, rows: list[list[str]], left: int = 2, *,
               note: bool = False, rules: bool = False, width: int | None = None,
               widths: list[int] | None = None, gap: str = "  ") -> list[str]:
    """Aligned lines: the first `left` columns (and, with `note`, the last) left, numbers right.

    `rules`: a dashed line under the header and another after the last row. `width`: names
    (left-aligned cells) too long for a table this wide are elided in the middle, the widest
    column first. `widths`: fixed column widths (cells wider than theirs are not cut).
    """
    table = [header, *rows] if header is not None else rows
    if not table:
        return []
    last = len(table[0]) - 1
    text_columns = [i for i in range(last + 1) if i < left or (note and i == last)]
    fitted = _fit([[len(c) for c in r] for r in table], text_columns, len(gap), width)
    if widths is not None:
        fitted.widths = list(widths)

    def line(cells: list[str]) -> str:
        cells = [elide(c, fitted.cut[i]) if i in fitted.cut else c for i, c in enumerate(cells)]
        return gap.join(c.ljust(w) if i in text_columns else c.rjust(w)
                        for i, (c, w) in enumerate(zip(cells, fitted.widths))).rstrip()

    rule = gap.join("-" * w for w in fitted.widths)
    if header is None:
        return [line(r) for r in rows]
    if rules:
        return [line(header), rule, *(line(r) for r in rows), rule]
    return [line(r) for r in table]


def _fit(lengths: list[list[int]], text_columns: list[int], gap: int,
         width: int | None) -> _Fitted:
    """Column widths; where the table is wider than `width`, the widest text column is cut (to
    no less than _NARROWEST) until it fits or nothing is left to cut."""
    widths = [max(r[i] for r in lengths) for i in range(len(lengths[0]))]
    fitted = _Fitted(widths)
    if width is None:
        return fitted
    while sum(widths) + gap * (len(widths) - 1) > width:
        over = sum(widths) + gap * (len(widths) - 1) - width
        column = max(text_columns, key=lambda i: widths[i], default=None)
        if column is None or widths[column] <= _NARROWEST:
            break
        widths[column] = max(_NARROWEST, widths[column] - over)
        fitted.cut[column] = widths[column]
    return fitted


def elide(name: str, width: int) -> str:
    """`name` cut to `width` characters in the middle, where names differ least:
    '/encoder/layer.11/attention/self/MatMul' → '/encoder/la…self/MatMul'."""
    if len(name) <= width:
        return name
    tail = (width - 1) // 2
    return name[:width - 1 - tail] + _ELLIPSIS + name[len(name) - tail:]


@output(DEFAULT, "aligned text", suffix=".txt")
def to_text(result, **options) -> str:
    """The aligned-text view: what `print`ing a table shows, and the CLI's default."""
    return "\n".join(_text_lines(result.view(**options))) + "\n"


def _text_lines(blocks: list) -> list[str]:
    lines: list[str] = []
    for block in blocks:
        if isinstance(block, Table):
            body = text_table(block.header, block.rows, block.left, note=block.note,
                              rules=block.rules, widths=block.widths, gap=block.gap,
                              width=None if block.widths else WIDTH)
            lines += body if block.closing_rule or not block.rules else body[:-1]
        elif isinstance(block, Text):
            lines += block.lines
        else:
            lines.append(block)
    return lines


# --- Markdown --------------------------------------------------------------------------------

def markdown_table(header: list[str], rows: list[list[str]], left: int = 2) -> list[str]:
    """Lines of a Markdown table, the first `left` columns left-aligned, numbers right-aligned."""
    return ["| " + " | ".join(header) + " |",
            "|" + "|".join("---" if i < left else "---:" for i in range(len(header))) + "|",
            *("| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows)]


@output("markdown", "Markdown", suffix=".md")
def to_markdown(result, **options) -> str:
    lines: list[str] = []
    for block in result.view(**options):
        if isinstance(block, Table):
            if block.header is not None or block.rows:  # Markdown tables need a header row
                header = block.header if block.header is not None else [""] * len(block.rows[0])
                lines += markdown_table(header, block.rows, block.left)
        elif isinstance(block, Text):
            lines += [f"{line}  " if block.hard_breaks else line for line in block.lines]
        else:
            lines.append(block)
    return "\n".join(lines) + "\n"


# --- HTML ------------------------------------------------------------------------------------

# Long names wrap inside their cell, at the separators marked <wbr> (html_table), instead of
# pushing the table off the page; numbers never wrap.
TABLE_CSS = ("table.onnxflops{border-collapse:collapse;margin:8px 0 16px;font-size:13px;"
             "max-width:100%}"
             "table.onnxflops td,table.onnxflops th{border:1px solid #ddd;padding:3px 8px;"
             "text-align:right;vertical-align:top;white-space:nowrap}"
             "table.onnxflops td.text,table.onnxflops th.text{text-align:left;white-space:normal;"
             "overflow-wrap:break-word}"
             "table.onnxflops th{background:#f3f3f3}")
# Where a name may wrap: after a path, scope or fusion separator.
_WRAP_AFTER = re.compile(r"([/_.+:,-])")


def html_table(header: list[str] | None, rows: list[list[str]], left: int = 1,
               note: bool = False) -> str:
    """A table whose text columns (the first `left`, and with `note` the last) wrap long names."""
    width = len(header) if header is not None else len(rows[0]) if rows else 0
    text = {i for i in range(width) if i < left or (note and i == width - 1)}

    def cells(tag: str, values: list[str]) -> str:
        return "".join(f"<{tag} class=\"text\">{_wrappable(v)}</{tag}>" if i in text
                       else f"<{tag}>{escape(v)}</{tag}>" for i, v in enumerate(values))

    head = f"<thead><tr>{cells('th', header)}</tr></thead>" if header is not None else ""
    body = "".join(f"<tr>{cells('td', r)}</tr>" for r in rows)
    return f"<table class=\"onnxflops\">{head}<tbody>{body}</tbody></table>"


def _wrappable(name: str) -> str:
    """`name` escaped, with a line-break opportunity after each separator."""
    return _WRAP_AFTER.sub(r"\1<wbr>", escape(name))


def html_fragment(result, **options) -> str:
    """The view as an HTML fragment: paragraphs of its lines, its tables (a notebook's display)."""
    parts: list[str] = []
    paragraph: list[str] = []

    def flush() -> None:
        if paragraph:
            parts.append("<p>" + "<br>".join(escape(line) for line in paragraph) + "</p>")
            paragraph.clear()

    for block in result.view(**options):
        if isinstance(block, Table):
            flush()
            parts.append(html_table(block.header, block.rows, block.left, block.note))
        else:
            for line in block.lines if isinstance(block, Text) else block.split("\n"):
                if line.strip():
                    paragraph.append(line.strip())
                else:
                    flush()
    flush()
    return f"<div class=\"onnxflops\"><style>{TABLE_CSS}</style>{''.join(parts)}</div>"


@output("html", "an HTML page ({page})", page=True)
def to_html(result, **options) -> str:
    """A self-contained page holding the view."""
    title = escape(str(getattr(result, "model", "onnxflops")))
    return (f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title}"
            "</title></head><body style=\"font-family:sans-serif\">"
            f"{html_fragment(result, **options)}</body></html>\n")


# --- JSON, CSV, pandas -----------------------------------------------------------------------

@output("json", "the JSON document", reads="document")
def to_json(result, indent: int | None = 2) -> str:
    """The result's document. Results whose documents hold long lists of records (a node per
    line) set JSON_RECORDS_PER_LINE; the others are indented throughout."""
    return json_text(result.to_dict(), indent,
                     getattr(result, "JSON_RECORDS_PER_LINE", False))


def json_text(doc: Any, indent: int | None = 2, records_per_line: bool = False) -> str:
    if indent is not None and records_per_line:
        return json_records_per_line(doc, " " * indent)
    return json.dumps(doc, indent=indent)


def json_records_per_line(doc: dict[str, Any], pad: str) -> str:
    """`doc` as JSON with one line per key, and one per record (dict) in a list or dict of them.

    Readable and greppable even for 50,000 nodes, and written by json's C encoder: an indented
    json.dumps runs the pure-Python one, five times slower.
    """
    def block(value: Any) -> str:
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            open_, records, close = "[", [json.dumps(v) for v in value], "]"
        elif isinstance(value, dict) and value and all(isinstance(v, dict) for v in value.values()):
            open_, records, close = "{", [f"{json.dumps(k)}: {json.dumps(v)}"
                                          for k, v in value.items()], "}"
        else:
            return json.dumps(value)
        return f"{open_}\n{pad * 2}" + f",\n{pad * 2}".join(records) + f"\n{pad}{close}"

    return "{\n" + ",\n".join(f"{pad}{json.dumps(k)}: {block(v)}" for k, v in doc.items()) + "\n}"


@output("csv", "CSV, one row per {rows}", reads="rows")
def to_csv(result, **options) -> str:
    return csv_text(result.rows(**options))


def csv_text(rows: Rows) -> str:
    """A header of the rows' columns, then one line per row (None is an empty cell)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(rows.columns)
    for row in rows:
        writer.writerow([row.get(c) for c in rows.columns])
    return out.getvalue()


def to_pandas(result, **options):
    """The rows as a pandas DataFrame (pandas is optional: the `pandas` extra)."""
    try:
        import pandas
    except ImportError:
        raise ImportError("to_pandas() needs pandas: pip install 'onnxflops[pandas]'") from None
    rows = result.rows(**options)
    return pandas.DataFrame(list(rows), columns=rows.columns)


def write(result, fmt: str, **options) -> str:
    """`result` in format `fmt` (one of `names()`); `options` (by=, top=) shape its table or
    rows (a document takes none)."""
    found = _WRITERS[fmt]
    return found.write(result, **({} if found.reads == "document" else options))


class Rendered:
    """What every result gets from the formats: to_pandas() and its notebook display."""

    def to_pandas(self, **options):
        """One row per entry (see `rows`) as a pandas DataFrame; needs the `pandas` extra."""
        return to_pandas(self, **options)

    def _repr_html_(self) -> str:
        return html_fragment(self, **getattr(self, "NOTEBOOK_VIEW", {}))
