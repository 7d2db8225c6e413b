"""The one value table over its three backends, and the op families written once (ops.py)."""

import ast
from pathlib import Path

import numpy as np
import pytest
import sympy
from onnx import TensorProto, helper

from onnxflops import ops
from onnxflops.analysis import evaluate
from onnxflops.analysis.values import (
    EXACT,
    PROBE,
    SYMBOLIC,
    VALUES,
    Exact,
    Operands,
    Probe,
    Symbolic,
    Unknown,
    followed_by,
    interpret,
    mean_axes,
)

PACKAGE = Path(__file__).resolve().parent.parent / "onnxflops"


def run(op_type, backend, inputs, **attrs):
    names = [f"in{i}" if v is not None else "" for i, v in enumerate(inputs)]
    values = dict(zip(names, inputs))
    return interpret(VALUES[op_type], backend, Operands(names, values.__getitem__), attrs)


def symbolic(output_dtype=TensorProto.INT64, shapes=None):
    return Symbolic((shapes or {}).get, output_dtype)


def test_one_row_gives_each_backend_its_kind_of_value():
    # Mul of [2, 3] by [4, 5]: 8 and 15, as int64 exactly, as float64 probed, and with a
    # symbol in place of the 2 the product 4·batch.
    exact = run("Mul", Exact(), [np.array([2, 3]), np.array([4, 5])])
    assert exact.dtype == np.int64 and exact.tolist() == [8, 15]
    assert run("Mul", Probe(), [np.array([2.0, 3.0]), np.array([4.0, 5.0])]).tolist() == [8.0, 15.0]
    batch = sympy.Symbol("batch")
    product = run("Mul", symbolic(), [np.array([batch, 3], dtype=object),
                                      np.array([4, 5], dtype=object)])
    assert product.tolist() == [4 * batch, 15]


def test_a_symbolic_value_stays_unknown_element_by_element():
    # [unknown, 3] + [1, 1]: the first stays unknown, the second is 4.
    total = run("Add", symbolic(), [np.array([None, 3], dtype=object), np.array([1, 1], dtype=object)])
    assert total.tolist() == [None, 4]


def test_symbolic_truths_are_numbers_and_integer_division_floors():
    assert run("Equal", symbolic(), [np.array([2, 3], dtype=object),
                                     np.array([2, 4], dtype=object)]).tolist() == [1, 0]
    seven, two = np.array([7], dtype=object), np.array([2], dtype=object)
    assert run("Div", symbolic(TensorProto.INT64), [seven, two]).tolist() == [3]  # 7 // 2
    assert run("Div", symbolic(TensorProto.FLOAT), [seven, two]).tolist() == [3.5]


def test_symbolic_shape_reads_dims_not_values():
    batch = sympy.Symbol("batch")
    shape = interpret(VALUES["Shape"], symbolic(shapes={"x": (batch, 12, 64)}),
                      Operands(["x"], lambda name: None), {"start": 1})
    assert shape == [12, 64]
    with pytest.raises(Unknown):  # Size needs every dim
        interpret(VALUES["Size"], symbolic(shapes={"x": (None, 12)}),
                  Operands(["x"], lambda name: None), {})


def test_a_probe_keeps_casts_in_float64():
    third = np.array([1.0 / 3.0])
    assert run("Cast", Probe(), [third], to=TensorProto.FLOAT16)[0] == 1.0 / 3.0
    assert run("Cast", Exact(), [third], to=TensorProto.FLOAT16)[0] == np.float16(1.0 / 3.0)


def test_an_op_outside_a_backends_rows_is_not_followed():
    # Integer Div truncates in ONNX: the exact backend leaves it to onnx's reference evaluator.
    node = helper.make_node("Div", ["a", "b"], ["c"])
    with pytest.raises(NotImplementedError):
        evaluate([node], {"a": np.array([7]), "b": np.array([2])}, 17)
    with pytest.raises(Unknown):
        run("Div", Exact(), [np.array([7]), np.array([2])])
    assert "Div" in followed_by(SYMBOLIC) & followed_by(PROBE) and "Div" not in followed_by(EXACT)


def test_mean_axes():
    assert mean_axes("GlobalAveragePool", {}, None, 4) == (2, 3)
    assert mean_axes("ReduceMean", {}, [-1], 3) == (2,)
    assert mean_axes("ReduceMean", {"axes": [2, 1]}, None, 3) == (1, 2)
    assert mean_axes("ReduceMean", {}, None, 3) == (0, 1, 2)
    assert mean_axes("ReduceMean", {"noop_with_empty_axes": 1}, None, 3) is None
    # A layer norm's mean over the last axis of a 2x4 probe: each row's own mean.
    x = np.arange(8.0).reshape(2, 4)
    assert run("ReduceMean", Probe(), [x, np.array([-1])]).tolist() == [[1.5], [5.5]]


def _families() -> dict[str, frozenset[str]]:
    return {name: frozenset(value) for name, value in vars(ops).items()
            if name.isupper() and isinstance(value, (frozenset, dict)) and len(value) >= 2
            and all(isinstance(k, str) and k[:1].isupper() for k in value)}


def _string_collections(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, (ast.Set, ast.Tuple, ast.List)) and len(node.elts) >= 2 \
                and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
            yield node.lineno, frozenset(e.value for e in node.elts)


def _op_lists(tree: ast.AST, op_types: frozenset[str]):
    """Literal collections of op names: two or more of ONNX's op types, and names alike."""
    for line, members in _string_collections(tree):
        if len(members & op_types) >= 2 and all(m.isidentifier() and m[:1].isupper()
                                                for m in members):
            yield line, members


def _outside_the_op_homes():
    """The package's modules but ops.py and the cost rules (whose op lists say which ops a rule
    prices)."""
    for path in sorted(PACKAGE.rglob("*.py")):
        if path != PACKAGE / "ops.py" and "costs" not in path.relative_to(PACKAGE).parts:
            yield path, ast.parse(path.read_text())


def test_no_op_family_is_written_twice():
    # Outside ops.py and the cost rules, no module writes one of ops.py's families out again.
    families = {members: name for name, members in _families().items()}
    found = [f"{path.relative_to(PACKAGE)}:{line} writes {families[members]}"
             for path, tree in _outside_the_op_homes()
             for line, members in _string_collections(tree) if members in families]
    assert found == []


def test_no_module_writes_a_list_of_ops_of_its_own():
    # Nor any other set of ops, a shape rule's or a pattern's: a family is named in ops.py, so a
    # new op joins it in one line. (The sets moved there: symbolic.py's shape rules, the contrib
    # shapes, the canonical patterns' and the weight patterns' small sets.)
    import onnx.defs

    op_types = frozenset(s.name for s in onnx.defs.get_all_schemas_with_history())
    found = [f"{path.relative_to(PACKAGE)}:{line} {sorted(members)}"
             for path, tree in _outside_the_op_homes()
             for line, members in _op_lists(tree, op_types)]
    assert found == []
