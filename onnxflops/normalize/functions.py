"""Stage 3: bring the bound model to the form the counter expects.

Model-local functions are inlined so that their nodes are costed like any other.
"""

from __future__ import annotations

import onnx
import onnx.inliner

from onnxflops.errors import OnnxFlopsError, first_line


def normalize(model: onnx.ModelProto) -> onnx.ModelProto:
    if model.functions:
        _check_not_recursive(model.functions)
        try:
            model = onnx.inliner.inline_local_functions(model)
        except Exception as e:  # noqa: BLE001 - the inliner's checks raise several kinds
            raise OnnxFlopsError(f"the model's local functions cannot be inlined: {first_line(e)}") \
                from None
    return model


def _check_not_recursive(functions) -> None:
    """A local function that calls itself, directly or through others, is one line: onnx's
    inliner would loop (onnx 1.19 crashes the process)."""
    calls = {(f.domain, f.name): {(n.domain, n.op_type) for n in f.node} for f in functions}
    done: set = set()
    for start in calls:
        path, stack = set(), [(start, False)]
        while stack:  # depth first, without recursion: on leaving a function it leaves the path
            function, leaving = stack.pop()
            if leaving:
                path.discard(function)
                done.add(function)
                continue
            if function in path:
                raise OnnxFlopsError(f"the model's local functions cannot be inlined: "
                                     f"'{function[1]}' calls itself (a cycle of functions)")
            if function in done:
                continue
            path.add(function)
            stack.append((function, True))
            stack.extend((callee, False) for callee in calls[function] if callee in calls)
