"""The property every fuzz case must hold, for the API and for the command line.

`count` returns a report whose every number is non-negative and whose JSON, CSV, Markdown and
tables render; or it raises OnnxFlopsError. The CLI exits 0 or 1 with output, or 2 with one line.
A model counted must be one onnxruntime loads (`check_runtime`), but for what onnxflops accepts
on purpose: a missing external data file (counting reads headers only), ops of custom domains
(a rule may cost them; onnxruntime needs their kernels), op versions onnxruntime has no kernel
of, and opsets newer than it supports (counted with onnx's newest schemas, with a warning).
Each check returns an outcome name and, for failures, a signature naming where it went wrong.
"""

from __future__ import annotations

import contextlib
import io
import numbers
import re
import traceback
from pathlib import Path

OK, CLEAN = "ok", "clean error"
TRACEBACK, NEGATIVE = "traceback", "negative count"
BLOW_UP, HANG, CRASH = "blow-up", "hang", "crash"
INVALID = "counted invalid"  # counted, though onnxruntime refuses to load it
FAILURES = (TRACEBACK, NEGATIVE, INVALID, BLOW_UP, HANG, CRASH)
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


def check_api(path: str | Path, batch: int | None = 2, symbolic: bool = False) -> tuple[str, str]:
    from onnxflops import OnnxFlopsError, count

    try:
        report = count(str(path), batch=batch, symbolic=symbolic)
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


def check_cli(path: str | Path, *options: str, command: str = "count") -> tuple[str, str]:
    """`onnxflops COMMAND PATH OPTIONS...`; `report` writes its page (the options name where),
    `compare` compares the model with itself."""
    from onnxflops.cli import main

    argv = [command, str(path), *options]
    if command == "compare":
        argv.insert(2, str(path))
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
    except MemoryError as e:
        return BLOW_UP, signature(e)
    except SystemExit as e:
        code = e.code
    except Exception as e:
        return TRACEBACK, "cli " + signature(e)
    lines = err.getvalue().splitlines()
    if code in (0, 1) and (out.getvalue() or command == "report"):
        return OK, ""
    if code == 2 and len(lines) == 1 and not out.getvalue():
        return CLEAN, ""
    first = lines[0][:80] if lines else ""
    return TRACEBACK, f"cli exit {code}, {len(lines)} stderr lines: {first}"


# What onnxruntime refuses that onnxflops counts on purpose (see the module's docstring, and
# docs/reliability.md, "What is refused"): a missing external data file, an opset newer than
# onnxruntime supports (counted with onnx's newest schemas and a warning), an op version it has no
# kernel of.
_ACCEPTED_ON_PURPOSE = ("external data", "externaldata", "external_data", "no such file",
                        "is under development", "unsupported onnx opset",
                        "could not find an implementation for")
# onnxruntime running out of the harness's memory cap: no verdict on the model.
_NO_VERDICT = ("bad_alloc", "out of memory", "failed to allocate")


def check_runtime(path: str | Path) -> tuple[str, str]:
    """OK where onnxruntime loads the model (or refuses it only for what onnxflops accepts on
    purpose; or runs out of memory, which is no verdict, and says so); INVALID with
    onnxruntime's reason otherwise."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.log_severity_level = 4
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    try:
        onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    except Exception as e:  # noqa: BLE001 - onnxruntime's refusals come in several kinds
        text = str(e).lower()
        if any(reason in text for reason in _NO_VERDICT):
            return OK, "onnxruntime out of memory"
        if any(reason in text for reason in _ACCEPTED_ON_PURPOSE) or _custom_domain_op(text) \
                or _custom_op_typed_in_function(str(e), path):
            return OK, ""
        reason = str(e).replace(str(path), "FILE").strip().splitlines()[0]
        reason = reason.split("failed:")[-1].split(" : ")[-1]
        return INVALID, reason[:100]
    return OK, ""


def inlined_nodes(path: str | Path) -> int:
    """nodes = Σ over the graphs' nodes of (size(f) where the node calls local function f, else 1),
    size(f) the same sum over f's body: the nodes onnxruntime makes when it inlines the model's
    local functions (2^24 for a function calling the one below twice, 24 levels deep). 0 where
    onnx cannot parse the file, or a function calls itself (onnxruntime judges those)."""
    import onnx

    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception:  # noqa: BLE001 - a file onnx cannot read is onnxruntime's to refuse
        return 0
    bodies = {(f.domain, f.name): f for f in model.functions}
    sizes: dict[tuple[str, str], int] = {}

    def size(nodes, calling: frozenset) -> int:
        total = 0
        for node in nodes:
            key = (node.domain, node.op_type)
            if key in calling:
                raise RecursionError(key)
            if key in bodies:
                if key not in sizes:
                    sizes[key] = size(bodies[key].node, calling | {key})
                total += sizes[key]
            else:
                total += 1 + sum(size(g.node, calling) for a in node.attribute
                                 for g in [*([a.g] if a.HasField("g") else []), *a.graphs])
        return total
    try:
        return size(model.graph.node, frozenset())
    except RecursionError:
        return 0


def _custom_op_typed_in_function(message: str, path: str | Path) -> bool:
    """onnxruntime cannot type a local function's output where its body calls an op of a custom
    domain that no function defines: the same op it would refuse at the top level for want of a
    kernel ("no op registered"), which a custom op library would register."""
    import onnx

    called = re.search(r"Op \((\w+)\) output arg .* type inference failed", message)
    if not called:
        return False
    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception:  # noqa: BLE001 - a file onnx cannot read is onnxruntime's to refuse
        return False
    functions = {(f.domain, f.name): f for f in model.functions}
    pending = [f for f in model.functions if f.name == called.group(1)]
    seen: set = set()
    while pending:
        function = pending.pop()
        if id(function) in seen:
            continue
        seen.add(id(function))
        for node in function.node:
            if (node.domain, node.op_type) in functions:
                pending.append(functions[node.domain, node.op_type])
            elif node.domain not in ("", "ai.onnx", "ai.onnx.ml", "com.microsoft"):
                return True
    return False


def _custom_domain_op(text: str) -> bool:
    """onnxruntime lacks a kernel of an op outside the domains it implements."""
    if "no op registered" not in text and "not a registered function/op" not in text:
        return False
    return not any(f"domain: {d}" in text or f"domain_version of" in text and d in text
                   for d in ("ai.onnx ", "ai.onnx.ml", "com.microsoft"))
