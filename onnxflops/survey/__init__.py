"""`onnxflops survey`: count whole registries of models, each row held against the framework's own
count (see `rows` for the verdicts), one process per model under memory and time caps.

Importing this package imports no framework: each row's process imports what its model needs.
"""

from __future__ import annotations

from pathlib import Path

from onnxflops.formats import markdown_table

from onnxflops.survey.rows import COLUMNS, LLM_COLUMNS, VERDICTS, judge, top_reasons, totals
from onnxflops.survey.run import Caps, run_local, run_ray
from onnxflops.survey.registries import SOURCES, tasks
from onnxflops.survey.sources import Source, Subject, Task
from onnxflops.survey.store import RowStore, read_any, render, summary_text

__all__ = ["COLUMNS", "Caps", "LLM_COLUMNS", "RowStore", "SOURCES", "Source", "Subject", "Task", "VERDICTS",
           "judge", "read_any", "render", "summary", "summary_table", "summary_text", "survey",
           "tasks",
           "top_reasons", "totals"]


def survey(sources: list[str] | str, output: str | Path | None = None, *, jobs: int = 1,
           memory_gb: float = 6.0, timeout: float = 600.0, ray: str | None = None,
           inputs: dict | None = None, progress: bool = True, llm: bool = False) -> list[dict]:
    """Count every model the SOURCE[:PATTERN] specs name, each against its framework's oracle.

    `output`: the file the rows are appended to as they finish, a .csv or .jsonl store or any
    format `onnxflops.formats` writes (kept beside a .jsonl store); a rerun with the same file
    skips the models already in it. `jobs`: rows run at once; `ray`: run
    them as Ray tasks ('auto' starts a local Ray). `inputs`: input name → dims, for factory specs.
    `llm`: serving rows (survey.llm: LLM_COLUMNS) of transformers' causal-LM types instead.
    Returns the rows asked for (those found in `output` first).
    """
    todo = tasks([sources] if isinstance(sources, str) else list(sources), inputs, llm)
    store = RowStore(output, LLM_COLUMNS if llm else COLUMNS) if output is not None else None
    done = store.done if store is not None else set()
    rows = [r for r in (store.rows if store is not None else []) if r["model"] in
            {t.label for t in todo}]
    todo = [t for t in todo if t.label not in done]
    caps = Caps(memory_gb, timeout, threads=1 if jobs > 1 else 2)
    with _bar(len(todo), progress) as bar:
        def finished(row: dict) -> None:
            rows.append(row)
            if store is not None:
                store.append(row)
            bar.set_postfix_str(f"{row['model']}: {row['verdict']}", refresh=False)
            bar.update()

        if ray:
            run_ray(todo, caps, ray, jobs, finished)
        else:
            run_local(todo, caps, jobs, finished)
    return rows


class _NoBar:
    """What the survey calls on a bar, doing nothing: without tqdm (it comes with the framework
    extras), or with progress off, rows are counted all the same."""

    def __enter__(self) -> "_NoBar":
        return self

    def __exit__(self, *exc) -> None:
        return None

    def set_postfix_str(self, *args, **kwargs) -> None:
        return None

    def update(self, *args) -> None:
        return None


def _bar(total: int, progress: bool):
    if not progress:
        return _NoBar()
    try:
        from tqdm import tqdm
    except ImportError:
        return _NoBar()
    return tqdm(total=total, unit="model", desc="survey")


def summary(path: str | Path) -> str:
    """Totals per verdict and the most common reasons, of a survey file."""
    return summary_text(read_any(path))


def summary_table(paths: list[str | Path], reasons: int = 10) -> str:
    """A Markdown table of the totals per verdict of each survey file, then each file's most
    common reasons."""
    header = ["table", "models", *VERDICTS]
    cells, notes = [], []
    for path in paths:
        rows = read_any(path)
        cells.append([str(path), str(len(rows)), *(str(n) for n in totals(rows).values())])
        common = top_reasons(rows, reasons)
        if common:
            notes += ["", f"{path}, most common reasons:",
                      *(f"- {n} {verdict}: {reason}" for verdict, reason, n in common)]
    return "\n".join([*markdown_table(header, cells, left=1), *notes])
