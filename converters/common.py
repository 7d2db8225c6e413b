"""Small helpers shared by the Keras and PyTorch converters."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

from onnxflops.bind.inputs import is_single_input  # noqa: F401 - the converters' name for it
from onnxflops.errors import OnnxFlopsError

# The extra of pyproject.toml that installs each module a conversion imports.
EXTRA_OF_MODULE = {"tensorflow": "keras", "keras": "keras", "tf2onnx": "keras",
                   "torch": "torch", "onnxscript": "torch", "onnx_ir": "torch",
                   "transformers": "hf"}
# Where a graph-only model's initializers say their data lives: a file that is never written.
ABSENT_WEIGHTS = "weights-not-written.bin"


def is_keras_model(model) -> bool:
    """A keras.Model, told without importing Keras (a model of it means Keras is loaded)."""
    keras = sys.modules.get("keras")
    return keras is not None and isinstance(model, keras.Model)


def is_torch_model(model) -> bool:
    """A torch nn.Module or ExportedProgram, told without importing torch."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(model, (torch.nn.Module, torch.export.ExportedProgram))


def root_cause(e: BaseException) -> BaseException:
    """The innermost exception of a chain: exporters wrap the one that names the op."""
    while e.__cause__ is not None:
        e = e.__cause__
    return e


@contextlib.contextmanager
def triton_kept_out() -> Iterator[None]:
    """`import triton` fails (ImportError) for the duration if TensorFlow is loaded and triton not.

    Both bundle LLVM: loading triton after TensorFlow aborts the process ("Option ... registered
    more than once"). torch imports triton when torch._dynamo first loads, which exporting does;
    exporting needs no triton, and torch takes its absence (cached for the process) as on a
    machine without it. Once TensorFlow is loaded triton could not load anyway.
    """
    hide = "tensorflow" in sys.modules and "triton" not in sys.modules
    if hide:
        sys.modules["triton"] = None  # the import system's "known missing" mark
    try:
        yield
    finally:
        if hide and sys.modules.get("triton", 0) is None:
            del sys.modules["triton"]


def install_hint(e: ImportError) -> str:
    """`: pip install 'onnxflops[extra]'` when `e` is a framework module missing; else ''."""
    extra = EXTRA_OF_MODULE.get((getattr(e, "name", None) or "").partition(".")[0])
    return f": pip install 'onnxflops[{extra}]'" if extra else ""


def import_transformers():
    """transformers, or one line saying which extra installs it."""
    try:
        import transformers
    except ImportError as e:
        raise OnnxFlopsError(f"this needs transformers{install_hint(e)}") from None
    return transformers


@contextlib.contextmanager
def framework_needed(subject: str) -> Iterator[None]:
    """A framework module missing while converting `subject` becomes one line saying which extra
    installs it; any other ImportError is a bug and stays one."""
    try:
        yield
    except ImportError as e:
        hint = install_hint(e)
        if not hint:
            raise
        raise OnnxFlopsError(f"{subject}: converting it needs {e.name}{hint}") from None


@contextlib.contextmanager
def framework_logging_silenced() -> Iterator[None]:
    """No Python log record is emitted for the duration: torch's fake-tensor and export loggers
    print a traceback of dozens of lines for a shape that does not fit, tf2onnx logs every
    rewrite. A failed conversion is reported in one line; the loggers' own levels are untouched."""
    previous = logging.root.manager.disable
    logging.disable(logging.CRITICAL)
    try:
        yield
    finally:
        logging.disable(previous)


# A failed conversion's line: the root cause, short enough to read at a glance.
MAX_FAILURE_LINE = 200


def conversion_failed(label: str, cause: str, hint: str = "", details: str | None = None
                      ) -> OnnxFlopsError:
    """What a failed conversion raises: `label: cause hint` in one line of at most
    MAX_FAILURE_LINE characters, the cause cut to fit (the hint, how to fix it, is kept);
    `details`, every exporter's message and traceback, stay on the error for --debug."""
    room = MAX_FAILURE_LINE - len(label) - len(hint) - 2
    if len(cause) > room:
        cause = cause[:max(room - 1, 0)].rstrip() + "…"
    return OnnxFlopsError(f"{label}: {cause}{hint}"[:MAX_FAILURE_LINE], details)


@contextlib.contextmanager
def native_output_silenced():
    """Nothing written to the process's stdout and stderr reaches them for the duration, from
    C++ too: TensorFlow's logging on import and on first use, the TorchScript exporter's graph
    dumps. Errors come as exceptions and are reported in one line."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(fd) for fd in (1, 2)]
    with open(os.devnull, "w") as devnull:
        for fd in (1, 2):
            os.dup2(devnull.fileno(), fd)
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            for fd, copy in zip((1, 2), saved):
                os.dup2(copy, fd)
                os.close(copy)


def keras_imported():
    """Keras (and TensorFlow under it), imported without a line of TensorFlow's C++ logging: its
    log level is set before the import, and what it writes before it reads that level ("Could
    not find cuda drivers", logged before absl::InitializeLog) is discarded. Every import of
    Keras or TensorFlow that onnxflops makes goes through here."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    if "keras" not in sys.modules:
        with native_output_silenced():
            import keras  # noqa: F401
    return sys.modules["keras"]


_HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"


def check_container(path: Path) -> None:
    """A .keras or .pt2 file is a zip archive, an .h5 file HDF5: what is neither is said so in
    one line, before a framework loads it (and says "File not found", or offers --unsafe)."""
    suffix = path.suffix.lower()
    if not path.is_file():
        raise OnnxFlopsError(f"{path}: not a regular file")
    if suffix == ".h5":
        with open(path, "rb") as f:
            if f.read(len(_HDF5_SIGNATURE)) != _HDF5_SIGNATURE:
                raise OnnxFlopsError(f"{path}: not an HDF5 file, as an .h5 Keras model is")
    elif not zipfile.is_zipfile(path):
        kind = "a .keras model" if suffix == ".keras" else "a torch.export .pt2 program"
        raise OnnxFlopsError(f"{path}: not a zip archive, as {kind} is")
