"""One survey row, made in the process that builds the model: build, the oracle, our count.

The model is built on the CPU unless its weights would not fit the memory it may use, in which case
it is built on the meta device (weights without bytes): both the oracle and the count read shapes
only then.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import os
import resource
import time
import warnings
from typing import Callable

from onnxflops.errors import first_line
from onnxflops.survey.oracle import checked_torch_oracle
from onnxflops.survey.rows import blank_row, judge
from onnxflops.survey.registries import SOURCES
from onnxflops.survey.sources import Subject, Task

# A model whose weights take more than this share of the memory cap is built on the meta device:
# the oracle's forward and the export each need room beside them.
WEIGHTS_SHARE = 1 / 3


def measure(task: Task, memory_gb: float, stage: Callable[[str], None] = lambda s: None) -> dict:
    """The row of `task`; `stage(name)` is told each stage (build, oracle, count) as it starts."""
    row = blank_row(task.label)
    failures: dict[str, str] = {}
    uncosted = bound = ""
    stage("build")
    try:
        subject, on_meta = build(task, memory_gb)
    except Exception as e:  # noqa: BLE001 - the registry's builder raises anything
        return _finished(judge(row, "", {"build": failure(e)}))
    row["input"] = describe(subject) + (" on meta" if on_meta else "")
    stage("oracle")
    missed: dict[str, int] = {}
    try:
        subject, (columns, missed) = oracle_on_inputs_that_run(subject, on_meta)
        row["input"] = describe(subject) + (" on meta" if on_meta else "")
        row.update(columns)
    except Exception as e:  # noqa: BLE001 - the framework's own forward pass failed
        failures["oracle"] = failure(e)
        on_meta_columns = None
        if not on_meta and failures["oracle"].startswith("out of memory") \
                and _is_torch(subject.model):
            subject = getattr(e, "subject", subject)  # the inputs it ran out of memory on
            row["input"] = describe(subject)
            on_meta_columns = _oracle_on_meta(subject)
        if on_meta_columns is not None:
            columns, missed = on_meta_columns
            row.update(columns)
            row["input"] += " on meta"
            del failures["oracle"]
    if subject.twin is not None:
        stage("twin")
        row.update(twin(subject))
    stage("count")
    start = time.perf_counter()
    try:
        report, data_path = count(subject)
    except Exception as e:  # noqa: BLE001 - a row says why, and the survey goes on
        failures["count"] = failure(e)
    else:
        row.update(_counted(report))
        bound = "; ".join(note for note in (bound_note(report), data_path) if note)
        row["input"] = row["input"] or " ".join(f"{k}={'x'.join(map(str, v))}"
                                                for k, v in report.inputs.items())
        uncosted = uncosted_reason(report)
    row["seconds"] = round(time.perf_counter() - start, 2)
    discarded = discarded_work_of(subject, on_meta) if not failures and not uncosted \
        and row["macs"] < (row["oracle_macs"] or 0) else {}
    if row["twin_macs"] is not None:
        theirs = row["oracle_macs"] if row["oracle_macs"] is not None else row["macs"]
        row["twin_agrees"] = row["twin_macs"] == theirs
    return _finished(judge(row, uncosted, failures, bound, missed, discarded))


def build(task: Task, memory_gb: float) -> tuple[Subject, bool]:
    """The model of `task`, and whether it was built on the meta device."""
    source = SOURCES[task.source]
    try:
        subject = source.build(task)
    except MemoryError:
        subject = None
    except RuntimeError as e:  # torch's allocator says so in a RuntimeError
        if "allocate" not in str(e):
            raise
        subject = None
    if subject is not None and _weight_bytes(subject.model) <= memory_gb * 1e9 * WEIGHTS_SHARE:
        return subject, False
    if not _is_torch(None):
        raise MemoryError(f"building it takes more than {memory_gb:g} GB")
    subject = None  # its weights freed before the meta build
    gc.collect()
    import torch

    try:
        with torch.device("meta"):
            subject = source.build(task)
    except Exception:  # noqa: BLE001 - a builder that computes with tensors (.tolist() of widths)
        with _parameters_on_meta():
            subject = source.build(task)
        subject.model.to("meta")  # its buffers too
    return subject, True


@contextlib.contextmanager
def _parameters_on_meta():
    """Each parameter moves to the meta device as its module registers it, as accelerate's
    `init_empty_weights` does: a builder's own tensor arithmetic still runs on the CPU, and no
    more than one parameter's bytes are ever held."""
    import torch

    register = torch.nn.Module.register_parameter

    def register_on_meta(module, name, param):
        register(module, name, param)
        if param is not None:
            kind, fields = type(module._parameters[name]), module._parameters[name].__dict__
            module._parameters[name] = kind(module._parameters[name].to("meta"),
                                            requires_grad=param.requires_grad, **fields)

    torch.nn.Module.register_parameter = register_on_meta
    try:
        yield
    finally:
        torch.nn.Module.register_parameter = register


def oracle(subject: Subject, on_meta: bool) -> tuple[dict, dict[str, int]]:
    """The oracle's columns of the row (the framework's own MACs and params; for Keras, its
    unused params and buffers too), and the MACs FlopCounterMode missed by kind of module."""
    if isinstance(subject.model, (str, os.PathLike)):
        raise LookupError("an .onnx file has no framework oracle")
    if not _is_torch(subject.model):
        from onnxflops.oracles.keras import keras_oracle

        walked = keras_oracle(subject.model, subject.kwargs)
        return {"oracle_macs": walked.macs, "oracle_params": walked.params,
                "oracle_unused_params": walked.unused_params, "oracle_buffers": walked.buffers}, {}
    args, kwargs = subject.args, subject.kwargs
    if on_meta:
        args, kwargs = _to_meta(args), _to_meta(kwargs)
    macs, params, missed = checked_torch_oracle(subject.model, args, kwargs, subject.unread)
    return {"oracle_macs": macs, "oracle_params": params}, missed


def oracle_on_inputs_that_run(subject: Subject, on_meta: bool) -> tuple[Subject, tuple]:
    """The oracle (its columns and missed MACs) on the subject's inputs, or where its forward
    fails on them, on the first of its variants it runs on; with the subject called so (the
    count reads the same inputs). Where none runs, the failure on the inputs themselves, unless
    a variant ran out of memory: then that failure, its subject as the error's `subject` (to be
    measured again on meta, as the inputs would be)."""
    try:
        return subject, oracle(subject, on_meta)
    except Exception as first:  # noqa: BLE001 - the forward fails on these inputs
        if failure(first).startswith("out of memory"):
            first.subject = subject
        for variant in subject.variants:
            tried = dataclasses.replace(subject, kwargs=variant, variants=())
            try:
                return tried, oracle(tried, on_meta)
            except Exception as e:  # noqa: BLE001 - nor on this variant
                if failure(e).startswith("out of memory") and \
                        not failure(first).startswith("out of memory"):
                    e.subject, first = tried, e  # (PE Video's frames at timm's 336 px)
                continue
        raise first


def discarded_work_of(subject: Subject, on_meta: bool) -> dict[str, int]:
    """The MACs the oracle counts in modules whose output the forward's result never reads, by
    module (oracle.discarded_work): asked only of a count short of the oracle, since it runs the
    forward twice more and a backward pass. {} for a model that is not torch's, or where
    that fails."""
    if not _is_torch(subject.model):
        return {}
    from onnxflops.survey.oracle import discarded_work

    args, kwargs = subject.args, subject.kwargs
    if on_meta:
        args, kwargs = _to_meta(args), _to_meta(kwargs)
    try:
        return discarded_work(subject.model, args, kwargs)
    except Exception:  # noqa: BLE001 - the model's forward or backward raises anything
        return {}


def _oracle_on_meta(subject: Subject) -> tuple[dict, dict[str, int]] | None:
    """The oracle again with the model moved to the meta device, where its forward's activations
    take no memory either (a real-weight build whose forward ran out of memory); None where that
    fails too. FlopCounterMode reads shapes only, so its count is the same; the count that
    follows reads the meta model, as it does for a model built there."""
    subject.model.to("meta")
    gc.collect()
    try:
        return oracle(subject, on_meta=True)
    except Exception:  # noqa: BLE001 - a forward that reads data (.item()) cannot run on meta
        return None


def twin(subject: Subject) -> dict:
    """The twin's columns: its name and MACs, and whether they equal the oracle's (the twin's
    own failure is its MACs column's reason, never the row's verdict)."""
    label, macs_of = subject.twin
    try:
        macs = macs_of()
    except Exception as e:  # noqa: BLE001 - the other framework's model fails on its own
        return {"twin": f"{label} ({failure(e)[:200]})"}
    return {"twin": label, "twin_macs": macs}


def count(subject: Subject):
    """The subject's count, and what a DataPathWarning said of its conversion ('' if nothing):
    the trace holds one path of a model that branches or loops on tensor values."""
    import onnxflops
    from onnxflops.errors import DataPathWarning

    inputs = subject.kwargs or subject.args or None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("ignore")
        warnings.simplefilter("always", DataPathWarning)
        report = onnxflops.count(subject.model, inputs)
    said = [str(w.message) for w in caught if issubclass(w.category, DataPathWarning)]
    return report, (said[0].split(": ", 1)[-1] if said else "")


def _counted(report) -> dict:
    total = report.total
    return {"macs": total.macs, "flops": total.flops, "params": total.params,
            # Read where the count has them (unused params, foldable work), 0 where it has not.
            "unused_params": _amount(getattr(total, "unused_params", 0)),
            "foldable_macs": _amount(getattr(getattr(report, "foldable", None), "macs", 0)),
            "buffers": total.buffers, "bytes": total.bytes_read + total.bytes_written}


def _amount(value) -> int:
    return int(value or 0)


def bound_note(report) -> str:
    """How many nodes were counted at an upper bound (their sizes depend on data), if any."""
    bound = sum(1 for n in report.nodes if getattr(n, "bound", False))
    return f"{bound} nodes counted at a data-dependent upper bound" if bound else ""


def uncosted_reason(report) -> str:
    if not report.uncosted:
        return ""
    kinds = sorted({u.op_type for u in report.uncosted})
    first = report.uncosted[0]
    return (f"{len(report.uncosted)} nodes uncosted ({', '.join(kinds)}): "
            f"{first.op_type}: {first.reason}")[:300]


def describe(subject: Subject) -> str:
    """The inputs as `name=1x3x224x224`, positional ones by shape alone, lists in brackets."""
    if isinstance(subject.model, (str, os.PathLike)):
        return ""
    parts = [_shape(v) for v in subject.args] + [f"{k}={_shape(v)}" for k, v in
                                                  subject.kwargs.items()]
    return " ".join(parts)


def _shape(value) -> str:
    if isinstance(value, tuple) and value and all(isinstance(d, int) for d in value):
        return "x".join(map(str, value))  # a shape given as dims (a Keras input's)
    if isinstance(value, (list, tuple)):
        return "[" + " ".join(_shape(v) for v in value) + "]"
    shape = getattr(value, "shape", None)
    return "x".join(str(d) for d in shape) if shape is not None else repr(value)


def failure(e: BaseException) -> str:
    if isinstance(e, MemoryError) or any(s in str(e) for s in ("MemoryError", "can't allocate memory")):
        return f"out of memory ({first_line(e)[:200]})"
    return f"{type(e).__name__}: {first_line(e)}"[:300]


def peak_mb() -> float:
    """The largest resident memory this process has had, in MB (ru_maxrss is in KB on Linux)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def _finished(row: dict) -> dict:
    row["peak_mb"] = peak_mb()
    return row


def _weight_bytes(model) -> int:
    if not _is_torch(model):
        return 0
    return sum(t.numel() * t.element_size() for t in [*model.parameters(), *model.buffers()])


def _is_torch(model) -> bool:
    import sys

    torch = sys.modules.get("torch")
    return torch is not None and (model is None or isinstance(model, torch.nn.Module))


def _to_meta(value):
    import torch

    if isinstance(value, torch.Tensor):
        return value.to("meta")
    if isinstance(value, dict):
        return {k: _to_meta(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_to_meta(v) for v in value)
    return value
