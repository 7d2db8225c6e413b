"""The property every fuzz case must hold, for the API and for the command line.

`count` returns a report whose every number is non-negative and whose JSON, CSV, Markdown and
tables render; or it raises OnnxFlopsError. The CLI exits 0 or 1 with output, or 2 with one line.
Each check returns an outcome name and, for failures, a signature naming where it went wrong.
"""

from __future__ import annotations

import contextlib
import io
import numbers
import traceback
from pathlib import Path

OK, CLEAN = "ok", "clean error"
TRACEBACK, NEGATIVE = "traceback", "negative count"
BLOW_UP, HANG, CRASH = "blow-up", "hang", "crash"
FAILURES = (TRACEBACK, NEGATIVE, BLOW_UP, HANG, CRASH)
OUTCOMES = (OK, CLEAN, *FAILURES)


def signature(e: BaseException) -> str:
    """The exception's type and the innermost frame in onnxflops (or the last one): one bug, one
    signature, whatever the message's numbers and names."""
    frames = traceback.extract_tb(e.__traceback__)
    ours = [f for f in frames if "onnxflops" in f.filename or "converters" in f.filename]
    where = (ours or frames or [None])[-1]
    place = f"{Path(where.filename).name}:{where.lineno} {where.name}" if where else "?"
    return f"{type(e).__name__} at {place}"


def negatives(value, path: str = "") -> list[str]:
    """Where in a report's dict a number is negative (or not a number at all: NaN)."""
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in negatives(v, f"{path}.{k}")]
    if isinstance(value, (list, tuple)):
        return [p for i, v in enumerate(value) for p in negatives(v, f"{path}[{i}]")]
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return []
    return [f"{path}={value}"] if not value >= 0 else []


def check_api(path: str | Path, batch: int = 2) -> tuple[str, str]:
    from onnxflops import OnnxFlopsError, count

    try:
        report = count(str(path), batch=batch)
        bad = negatives(report.to_dict())
        if bad:
            return NEGATIVE, f"negative {bad[0].split('=')[0]}"
        report.to_json()
        report.to_csv()
        for by in ("node", "op", "layer", "category"):
            report.to_table(by)
            report.to_markdown(by)
    except OnnxFlopsError as e:
        lines = str(e).splitlines()
        if len(lines) != 1:
            return TRACEBACK, f"OnnxFlopsError of {len(lines)} lines"
        return CLEAN, ""
    except MemoryError as e:
        return BLOW_UP, signature(e)
    except RecursionError as e:
        return TRACEBACK, signature(e)
    except Exception as e:
        return TRACEBACK, signature(e)
    return OK, ""


def check_cli(path: str | Path, *options: str) -> tuple[str, str]:
    from onnxflops.cli import main

    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["count", str(path), *options])
    except MemoryError as e:
        return BLOW_UP, signature(e)
    except SystemExit as e:
        code = e.code
    except Exception as e:
        return TRACEBACK, "cli " + signature(e)
    lines = err.getvalue().splitlines()
    if code in (0, 1) and out.getvalue():
        return OK, ""
    if code == 2 and len(lines) == 1 and not out.getvalue():
        return CLEAN, ""
    first = lines[0][:80] if lines else ""
    return TRACEBACK, f"cli exit {code}, {len(lines)} stderr lines: {first}"
