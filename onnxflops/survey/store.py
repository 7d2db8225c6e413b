"""Where a survey's rows are kept: appended as each model finishes, read back to resume.

The durable store is a CSV file (`-o x.csv`) or JSON lines (`-o x.jsonl`); asked for a file of
any format of onnxflops.formats, told by its suffix (`-o x.json|.md|.html|.txt`), the rows are kept
in JSON lines beside it (x.jsonl) and the file asked for is written from them after each row.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from onnxflops import formats
from onnxflops.errors import OnnxFlopsError
from onnxflops.survey.rows import COLUMNS, LLM_COLUMNS, LLM_NUMERIC, NUMERIC, top_reasons, totals

STORES = (".csv", ".jsonl")


def rendered_format(path: str | Path) -> str | None:
    """The format of onnxflops.formats a file that is no store is written in (None: none's)."""
    suffix = Path(path).suffix.lower()
    return None if suffix in STORES else formats.by_suffix(suffix)


class RowStore:
    """The rows of one `-o` file: those already there (a rerun skips them) and those appended;
    `columns`: what a row holds (COLUMNS, or LLM_COLUMNS for the serving survey)."""

    def __init__(self, target: str | Path, columns: tuple[str, ...] = COLUMNS):
        self.target = Path(target)
        self.columns = columns
        self.format = rendered_format(self.target)
        if self.target.suffix.lower() not in STORES and self.format is None:
            raise OnnxFlopsError(f"-o {target}: write {output_suffixes()}")
        self.store = self.target if self.format is None else self.target.with_suffix(".jsonl")
        self.rows = read_rows(self.store, columns) if self.store.exists() else []
        if self.store.suffix.lower() == ".csv" and self.rows \
                and _header(self.store) != tuple(self.columns):
            _write_csv(self.store, self.rows, self.columns)  # fewer columns: rows append in these

    @property
    def done(self) -> set[str]:
        return {r["model"] for r in self.rows}

    def append(self, row: dict) -> None:
        self.rows.append(row)
        if self.store.suffix.lower() == ".csv":
            fresh = not self.store.exists() or self.store.stat().st_size == 0
            line_end = "\n" if fresh else _line_end(self.store)
            with open(self.store, "a", newline="") as f:
                writer = csv.DictWriter(f, self.columns, extrasaction="ignore",
                                        lineterminator=line_end)
                if fresh:
                    writer.writeheader()
                writer.writerow({k: "" if row.get(k) is None else row[k] for k in self.columns})
        else:
            with open(self.store, "a") as f:
                f.write(json.dumps({k: row.get(k) for k in self.columns}) + "\n")
        if self.format is not None:
            self.target.write_text(formats.write(Survey(self.rows, self.columns), self.format),
                                   encoding="utf-8")


def _header(path: Path) -> tuple[str, ...]:
    with open(path, newline="") as f:
        return tuple(next(csv.reader(f), ()))


def _line_end(path: Path) -> str:
    """The line ending a CSV store was written with ("\r\n" by Excel and csv's default), so rows
    appended or rewritten keep the file's own."""
    with open(path, "rb") as f:
        return "\r\n" if f.readline().endswith(b"\r\n") else "\n"


def _write_csv(path: Path, rows: list[dict], columns: tuple[str, ...]) -> None:
    line_end = _line_end(path) if path.exists() else "\n"
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, columns, extrasaction="ignore", lineterminator=line_end)
        writer.writeheader()
        writer.writerows({k: "" if r.get(k) is None else r[k] for k in columns} for r in rows)


def read_rows(path: str | Path, columns: tuple[str, ...] | None = None) -> list[dict]:
    """The rows of a store (.csv or .jsonl), numbers as numbers, missing values None; `columns`
    by default those of a serving survey's file where its first row has them, else COLUMNS."""
    path = Path(path)
    if path.suffix.lower() == ".jsonl":
        raw = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        columns = columns or _columns_of(raw[0] if raw else {})
        return [{**dict.fromkeys(columns), **r} for r in raw]
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        columns = columns or _columns_of(dict.fromkeys(reader.fieldnames or ()))
        return [_typed(r, columns) for r in reader]


def _columns_of(row: dict) -> tuple[str, ...]:
    return LLM_COLUMNS if "prefill_macs" in row else COLUMNS


def read_any(path: str | Path) -> list[dict]:
    """Rows from a store or from a rendered file's store beside it."""
    path = Path(path)
    if rendered_format(path) is not None:
        path = path.with_suffix(".jsonl")
    if not path.exists():
        raise OnnxFlopsError(f"{path}: no such survey file")
    return read_rows(path)


def _typed(raw: dict, columns: tuple[str, ...] = COLUMNS) -> dict:
    row = {k: raw.get(k) or "" for k in columns}
    for k in columns:
        if k in NUMERIC or k in LLM_NUMERIC:
            row[k] = int(row[k]) if row[k] != "" else None
    for k in ("seconds", "peak_mb"):
        row[k] = float(row[k]) if row[k] != "" else None
    if "twin" in row:  # a registry survey's row (a serving survey's has no twin)
        row["twin"] = row["twin"] or None
        row["twin_agrees"] = {"True": True, "False": False}.get(row["twin_agrees"])
    return row


def output_suffixes() -> str:
    """What `-o FILE` may end in: a store's suffix, or a format's."""
    rendered = [w.suffix for w in map(formats.writer, formats.names()) if w.suffix not in STORES]
    return ", ".join(STORES) + " or a file of " + ", ".join(rendered)


class Survey(formats.Rendered):
    """A survey's rows as a result onnxflops.formats writes (any format): the document is the
    totals per verdict and the rows; the view, the summary and a table of every column."""

    model = "onnxflops survey"  # the HTML page's title
    JSON_RECORDS_PER_LINE = True

    def __init__(self, records: list[dict], columns: tuple[str, ...] | None = None):
        self.records = records
        self.columns = columns or _columns_of(records[0] if records else {})

    def to_dict(self) -> dict:
        return {"totals": totals(self.records), "rows": self.records}

    def rows(self, **unused) -> formats.Rows:
        return formats.Rows(list(self.columns),
                            [{k: r.get(k) for k in self.columns} for r in self.records])

    def view(self, **unused) -> list:
        cells = [[_cell(r.get(k)) for k in self.columns] for r in self.records]
        return [formats.Text(summary_text(self.records).splitlines()), "",
                formats.Table(list(self.columns), cells, left=2)]


def render(rows: list[dict], suffix: str, columns: tuple[str, ...] | None = None) -> str:
    """The rows in the format of onnxflops.formats that `suffix` names (`columns`: by default
    those of the rows' kind of survey)."""
    return formats.write(Survey(rows, columns), formats.by_suffix(suffix))


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.1f}"
    return str(value)


def summary_text(rows: list[dict], reasons: int = 15) -> str:
    """Totals per verdict, then the most common failure reasons (numbers and names taken out)."""
    counts = totals(rows)
    lines = [f"{len(rows)} models: " + ", ".join(f"{k} {v}" for k, v in counts.items())]
    common = top_reasons(rows, reasons)
    if common:
        lines.append("most common reasons:")
        lines += [f"  {n:4d}  {verdict}: {reason}" for verdict, reason, n in common]
    return "\n".join(lines)
