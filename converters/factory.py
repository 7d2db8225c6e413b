"""A factory spec, `package.module:function`: the user's own function (or class) that returns a
keras.Model or a torch nn.Module. Naming it asks for its module to be imported and run."""

from __future__ import annotations

import importlib
import os
import re
import sys

from onnxflops.converters.common import (
    install_hint,
    is_keras_model,
    is_torch_model,
    native_output_silenced,
    triton_kept_out,
)
from onnxflops.errors import OnnxFlopsError, first_line

FACTORY_SPEC = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*")


def is_factory_spec(text: str) -> bool:
    """`package.module:function`, as the module and attribute names of Python are spelled."""
    return FACTORY_SPEC.fullmatch(text) is not None


def load_factory(spec: str):
    """The model `spec`'s function returns; one line for a spec that names none."""
    if not is_factory_spec(spec):
        raise OnnxFlopsError(f"{spec}: no such file (a factory is named as "
                             "package.module:function)")
    with triton_kept_out():  # the user's code may import torch._dynamo, which loads triton
        return _called(spec)


def _called(spec: str):
    module_name, _, attr = spec.partition(":")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # as `python -m` does: the user's own packages import
    try:
        with native_output_silenced():  # TensorFlow logs from C++ as it is imported
            module = importlib.import_module(module_name)
    except ImportError as e:
        raise OnnxFlopsError(f"{spec}: cannot import module '{module_name}' ({first_line(e)})"
                             f"{install_hint(e)}") from None
    except (Exception, SystemExit) as e:  # the module itself fails: a SyntaxError, a raise, exit()
        raise OnnxFlopsError(f"{spec}: importing module '{module_name}' raised "
                             f"{type(e).__name__}: {first_line(e)}") from None
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise OnnxFlopsError(f"{spec}: module '{module_name}' has no function '{attr}'")
    try:
        with native_output_silenced():
            model = factory()
    except (Exception, SystemExit) as e:  # the user's factory raised or exited: one line
        raise OnnxFlopsError(f"{spec}: the factory raised {type(e).__name__}: {first_line(e)}") \
            from None
    if not (is_keras_model(model) or is_torch_model(model)):
        raise OnnxFlopsError(f"{spec}: returned a {type(model).__name__}, not a keras.Model or a "
                             "torch nn.Module")
    return model
