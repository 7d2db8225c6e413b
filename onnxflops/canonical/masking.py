"""Attention masking in the form HF writes it: one Add of a mask to the scores.

TensorFlow's `tf.where(mask, scores, fill)` (Keras attention, keras-hub) reaches ONNX through
tf2onnx as arithmetic over the whole score tensor:

    Add(Mul(scores, Cast(c)), Mul(fill, Cast(Not(c))))

where HF and torch add a mask made by a selection: Add(scores, Where(c, 0, fill)). Both mask the
same scores; this rule writes the first as the second, so that masking costs one op per score
whichever framework wrote it. A fill of zero (Keras masks the probabilities after the softmax too)
is a selection, Where(c, scores, 0), which computes nothing.

torch's ONNX translation of scaled_dot_product_attention with a boolean mask guards the softmax
against a row masked whole (all −inf, so 0/0): Where(IsNaN(p), 0, p) over the probabilities p. The
guard is the exporter's, not the model's math (eager attention and TensorFlow's have none): it is
read as the softmax it protects.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import onnx
from onnx import helper

if TYPE_CHECKING:
    from onnxflops.canonical.editor import Editor


def select_as_masked_add(g: "Editor") -> bool:
    """Add(Mul(x, Cast(c)), Mul(k, Cast(Not(c)))) → Add(x, Where(c, 0, k)); Where(c, x, 0)
    where k is zero."""
    changed = False
    for add in g.of_type({"Add"}):
        if g.removed(add):
            continue
        found = _select(g, add)
        if found is None:
            continue
        kept_mul, filled_mul, scores, condition, fill = found
        fill_info = g.info(fill)
        condition_info = g.info(condition)
        if fill_info is None or condition_info is None or not fill_info.concrete \
                or not condition_info.concrete:
            continue
        removed = [kept_mul, add]
        if g.sole_consumer(filled_mul.output[0]) is add:
            removed.append(filled_mul)
        if g.scalar(fill) == 0:
            select = helper.make_node("Where", [condition, scores, fill], list(add.output))
            g.replace(removed, [g.named_after(select, add)])
            changed = True
            continue
        dtype = fill_info.dtype
        zero = g.add_constant("mask_zero", np.zeros((), helper.tensor_dtype_to_np_dtype(dtype)))
        mask = g.fresh("mask")
        g.set_info(mask, dtype, np.broadcast_shapes(fill_info.shape, condition_info.shape))
        where = g.named_after(helper.make_node("Where", [condition, zero.output[0], fill], [mask]),
                              filled_mul)
        masked = g.named_after(helper.make_node("Add", [scores, mask], list(add.output)), add)
        g.replace(removed, [zero, where, masked])
        changed = True
    return changed


def _select(g: "Editor", add: onnx.NodeProto):
    """(the Mul keeping x, the Mul filling k, x, c, k) where `add` selects by c, else None."""
    muls = [g.producer.get(name) for name in add.input]
    if len(muls) != 2 or any(m is None or m.op_type != "Mul" or m.domain for m in muls):
        return None
    for kept, filled in (muls, muls[::-1]):
        if g.sole_consumer(kept.output[0]) is not add:
            continue
        for slot in (0, 1):
            condition = _cast_condition(g, kept.input[slot])
            if condition is None:
                continue
            for fill_slot in (0, 1):
                negated = _cast_condition(g, filled.input[fill_slot])
                not_node = g.producer.get(negated) if negated else None
                if not_node is not None and not_node.op_type == "Not" \
                        and not_node.input[0] == condition:
                    return kept, filled, kept.input[1 - slot], condition, filled.input[1 - fill_slot]
    return None


def _cast_condition(g: "Editor", name: str) -> str | None:
    """The boolean tensor `name` is a Cast of, if it is one."""
    cast = g.producer.get(name)
    if cast is None or cast.op_type != "Cast" or cast.domain:
        return None
    info = g.info(cast.input[0])
    return cast.input[0] if info is not None and info.dtype == onnx.TensorProto.BOOL else None


def softmax_without_nan_guard(g: "Editor") -> bool:
    """Where(IsNaN(p), 0, p) → p, p = Softmax(s): the exporter's guard costs nothing beyond p."""
    changed = False
    for where in g.of_type({"Where"}):
        if g.removed(where):
            continue
        guard, zero, probabilities = where.input
        is_nan = g.producer.get(guard)
        softmax = g.producer.get(probabilities)
        if is_nan is None or is_nan.op_type != "IsNaN" or is_nan.domain \
                or is_nan.input[0] != probabilities or softmax is None \
                or softmax.op_type != "Softmax" or softmax.domain or g.scalar(zero) != 0:
            continue
        removed = [where] + ([is_nan] if g.sole_consumer(guard) is where else [])
        if where.output[0] in g.outputs:  # a graph output keeps its name: a copy, no work
            g.replace(removed, [g.named_after(
                helper.make_node("Identity", [probabilities], list(where.output)), where)])
        else:
            g.rename_uses(where.output[0], probabilities)
            g.remove(removed)
        changed = True
    return changed
