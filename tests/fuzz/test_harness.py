"""The long run's harness (tools/fuzz.py) judges what its cases did as it says: a case ended
while onnxruntime loads its model has no verdict (not a hang), a function bomb onnxruntime would
take minutes to inline is not loaded, every seed and generator meets every command."""

from __future__ import annotations

import importlib.util
import json
import signal
from pathlib import Path

import onnx
from onnx import TensorProto, helper

import oracle

_spec = importlib.util.spec_from_file_location(
    "fuzz_harness", Path(__file__).resolve().parents[2] / "tools" / "fuzz.py")
fuzz = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fuzz)

_OPSETS = [helper.make_opsetid("", 17), helper.make_opsetid("local", 1)]
_vi = helper.make_tensor_value_info


def _bomb(depth: int, fan: int, tmp_path: Path, in_loop: bool = False) -> Path:
    """f0 = Relu; f(k) calls f(k-1) `fan` times; the graph calls f(depth) once (inside a Loop's
    body beside an Identity, `in_loop`)."""
    functions = [helper.make_function("local", "f0", ["x"], ["y"],
                                      [helper.make_node("Relu", ["x"], ["y"])], _OPSETS)]
    for level in range(1, depth + 1):
        names = ["x", *[f"t{i}" for i in range(1, fan)], "y"]
        functions.append(helper.make_function("local", f"f{level}", ["x"], ["y"], [
            helper.make_node(f"f{level - 1}", [names[i]], [names[i + 1]], domain="local")
            for i in range(fan)], _OPSETS))
    call = helper.make_node(f"f{depth}", ["x"], ["y"], domain="local")
    if in_loop:
        body = helper.make_graph(
            [helper.make_node(f"f{depth}", ["v"], ["v_next"], domain="local"),
             helper.make_node("Identity", ["cond"], ["cond_next"])], "body",
            [_vi("i", TensorProto.INT64, []), _vi("cond", TensorProto.BOOL, []),
             _vi("v", TensorProto.FLOAT, [4])],
            [_vi("cond_next", TensorProto.BOOL, []), _vi("v_next", TensorProto.FLOAT, [4])])
        call = helper.make_node("Loop", ["trip", "", "x"], ["y"], body=body)
    graph = helper.make_graph([call], "g", [_vi("x", TensorProto.FLOAT, [4]),
                                            _vi("trip", TensorProto.INT64, [])],
                              [_vi("y", TensorProto.FLOAT, None)])
    path = tmp_path / "bomb.onnx"
    onnx.save(helper.make_model(graph, opset_imports=_OPSETS, functions=functions), path)
    return path


def test_inlined_nodes_are_the_calls_expanded(tmp_path):
    assert oracle.inlined_nodes(_bomb(5, 2, tmp_path)) == 2**5
    assert oracle.inlined_nodes(_bomb(3, 3, tmp_path)) == 3**3
    # A Loop node (1) whose body calls f4 (16 Relus) beside an Identity (1).
    assert oracle.inlined_nodes(_bomb(4, 2, tmp_path, in_loop=True)) == 1 + 16 + 1
    (tmp_path / "junk.onnx").write_bytes(b"\x08\xff\xff")
    assert oracle.inlined_nodes(tmp_path / "junk.onnx") == 0


def test_a_bomb_onnxruntime_would_inline_for_minutes_is_not_loaded(tmp_path):
    # 2^16 nodes: minutes of onnxruntime's inlining, past the oracle's CPU seconds (no verdict).
    outcome, where = fuzz.runtime_verdict(_bomb(16, 2, tmp_path), 20, capped=False)
    assert (outcome, where) == (oracle.OK, fuzz.NO_VERDICT + "onnxruntime would inline 65536 nodes")


def _finished(status: int, *lines: dict) -> dict:
    return {"status": status, "cpu": 1.0, "maxrss": 900.0, "base": 800.0, "fork": 0.01,
            "lines": "".join(json.dumps(line) + "\n" for line in lines)}


def test_a_case_ended_while_onnxruntime_loads_has_no_verdict_and_is_no_hang():
    counted = {"outcome": oracle.OK, "where": "", "command": "count", "rss_mb": 850.0,
               "oracle_key": "abc"}
    result = fuzz.judge(_finished(signal.SIGXCPU, counted), timeout=20, memory_mb=1024)
    assert result["outcome"] == oracle.OK
    assert result["verdict"] == ["abc", oracle.OK, fuzz.NO_VERDICT
                                 + f"onnxruntime over {fuzz.ORACLE_CPU_SECONDS} CPU s"]
    # Ended before it sent anything: the case's own hang.
    assert fuzz.judge(_finished(signal.SIGXCPU), 20, 1024) == {"outcome": oracle.HANG,
                                                               "where": "over 20 CPU s"}
    # The verdict that came: onnxruntime refused the model the count counted.
    refused = {**counted, "outcome": oracle.INVALID, "where": "Node (r) ..."}
    del refused["oracle_key"]
    assert fuzz.judge(_finished(0, counted, refused), 20, 1024)["outcome"] == oracle.INVALID


def test_a_blow_up_is_the_counts_memory_not_onnxruntimes():
    counted = {"outcome": oracle.OK, "where": "", "command": "count"}
    # The process peaked at 1,500 MB (onnxruntime's load), the count at 900: 100 MB grown.
    finished = {**_finished(0, {**counted, "rss_mb": 900.0}), "maxrss": 1500.0}
    assert fuzz.judge(finished, 20, 1024)["outcome"] == oracle.OK
    finished = {**_finished(0, {**counted, "rss_mb": 1400.0}), "maxrss": 1500.0}
    assert fuzz.judge(finished, 20, 1024) == {**counted, "rss_mb": 1400.0,
                                              "outcome": oracle.BLOW_UP, "where": "600 MB"}


def test_every_seed_and_generator_meets_every_command():
    names = 15  # 7 seeds and 8 generators: case % 15 picks the seed
    for residue in range(names):
        met = {fuzz.command_of(case, None)[0] for case in range(residue, 6000, names)}
        assert met == {label for label, _, _ in fuzz.COMMANDS}, residue
