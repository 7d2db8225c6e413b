"""Small helpers shared by the Keras and PyTorch converters."""

from __future__ import annotations

import contextlib
import zipfile
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from onnxflops.errors import OnnxFlopsError

# The extra of pyproject.toml that installs each module a conversion imports.
EXTRA_OF_MODULE = {"tensorflow": "keras", "keras": "keras", "tf2onnx": "keras",
                   "torch": "torch", "onnxscript": "torch", "onnx_ir": "torch",
                   "transformers": "hf"}


def is_single_input(value) -> bool:
    """A lone shape (a sequence of ints) or a lone array, as opposed to a sequence of them."""
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return True
    return isinstance(value, Sequence) and all(isinstance(d, (int, np.integer)) for d in value)


def root_cause(e: BaseException) -> BaseException:
    """The innermost exception of a chain: exporters wrap the one that names the op."""
    while e.__cause__ is not None:
        e = e.__cause__
    return e


def install_hint(e: ImportError) -> str:
    """`: pip install 'onnxflops[extra]'` when `e` is a framework module missing; else ''."""
    extra = EXTRA_OF_MODULE.get((getattr(e, "name", None) or "").partition(".")[0])
    return f": pip install 'onnxflops[{extra}]'" if extra else ""


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
