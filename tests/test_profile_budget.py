"""profile's budgets: what a run will take is estimated from the count and refused, in one line
with exit 2, before onnxruntime loads the model (never a hang, never a signal)."""

from __future__ import annotations

import resource
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxflops.api import count_with_model
from onnxflops.errors import OnnxFlopsError
from onnxflops.profiling import budget

pytest.importorskip("onnxruntime")


def nested_loops(levels: int, trips: int) -> onnx.ModelProto:
    """`levels` Loops nested, each of `trips` trips, the innermost body an Add on a [1, 8] state;
    every body also passes its condition through an Identity (2 nodes a body)."""
    body = None
    for depth in range(1, levels + 1):
        s_in, s_out, c_in, c_out = f"s_in{depth}", f"s_out{depth}", f"c_in{depth}", f"c_out{depth}"
        nodes = [helper.make_node("Identity", [c_in], [c_out], name=f"cond{depth}")]
        inits = []
        if body is None:
            nodes.append(helper.make_node("Add", [s_in, s_in], [s_out], name="add"))
        else:
            inits = [numpy_helper.from_array(np.array(trips, np.int64), f"M{depth}"),
                     numpy_helper.from_array(np.array(True), f"go{depth}")]
            nodes.append(helper.make_node("Loop", [f"M{depth}", f"go{depth}", s_in], [s_out],
                                          name=f"loop{depth}", body=body))
        body = helper.make_graph(
            nodes, f"body{depth}",
            [helper.make_tensor_value_info(f"i{depth}", TensorProto.INT64, []),
             helper.make_tensor_value_info(c_in, TensorProto.BOOL, []),
             helper.make_tensor_value_info(s_in, TensorProto.FLOAT, [1, 8])],
            [helper.make_tensor_value_info(c_out, TensorProto.BOOL, []),
             helper.make_tensor_value_info(s_out, TensorProto.FLOAT, [1, 8])], inits)
    graph = helper.make_graph(
        [helper.make_node("Loop", ["M", "go", "x"], ["y"], name="outer", body=body)], "nested",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])],
        [numpy_helper.from_array(np.array(trips, np.int64), "M"),
         numpy_helper.from_array(np.array(True), "go")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def scan_rows(rows: int, width: int = 8) -> onnx.ModelProto:
    """A Scan adding each of `rows` rows into a state (2 body nodes a row)."""
    vec = [width]
    body = helper.make_graph(
        [helper.make_node("Add", ["s", "r"], ["s2"], name="acc"),
         helper.make_node("Identity", ["s2"], ["o"], name="emit")], "scan_body",
        [helper.make_tensor_value_info("s", TensorProto.FLOAT, vec),
         helper.make_tensor_value_info("r", TensorProto.FLOAT, vec)],
        [helper.make_tensor_value_info("s2", TensorProto.FLOAT, vec),
         helper.make_tensor_value_info("o", TensorProto.FLOAT, vec)])
    graph = helper.make_graph(
        [helper.make_node("Scan", ["s0", "x"], ["final", "ys"], name="scan", num_scan_inputs=1,
                          body=body)], "scan",
        [helper.make_tensor_value_info("s0", TensorProto.FLOAT, vec),
         helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, width])],
        [helper.make_tensor_value_info("final", TensorProto.FLOAT, vec),
         helper.make_tensor_value_info("ys", TensorProto.FLOAT, [rows, width])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def external_weights(folder, elements: int) -> str:
    """A model whose one weight of `elements` float32 lies in a sparse external file (no disk
    used): y = x + sum(w)."""
    w = onnx.TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[elements],
                         data_location=TensorProto.EXTERNAL)
    for key, value in (("location", "w.bin"), ("offset", "0"), ("length", str(4 * elements))):
        w.external_data.add(key=key, value=value)
    graph = helper.make_graph([helper.make_node("ReduceSum", ["w"], ["s"], keepdims=0),
                               helper.make_node("Add", ["x", "s"], ["y"])], "big",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(folder / "big.onnx"))
    with open(folder / "w.bin", "wb") as f:
        f.truncate(4 * elements)
    return str(folder / "big.onnx")


def profile_cli(path: str, *options: str, address_space: int | None = None, timeout: float = 60):
    def cap():
        if address_space is not None:
            resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))

    return subprocess.run([sys.executable, "-m", "onnxflops.cli", "profile", path,
                           "--no-ceilings", *options], capture_output=True, text=True,
                          timeout=timeout, preexec_fn=cap)


def assert_refused(done, *words: str) -> None:
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    for word in words:
        assert word in lines[0], lines[0]


def test_node_runs_multiply_through_nested_loops():
    # 3 levels of 10 trips, 2 nodes per body: outer Loop 1 + its body 10·2 + the middle body
    # 10·10·2 + the innermost 10·10·10·2 = 1 + 20 + 200 + 2000 = 2221.
    counted = count_with_model(nested_loops(3, 10))
    assert budget.count_node_runs(counted.analyzed.graph) == (2221, 0)


def test_node_runs_of_a_scan_are_its_rows_times_its_body():
    counted = count_with_model(scan_rows(1000))
    assert budget.count_node_runs(counted.analyzed.graph) == (1 + 1000 * 2, 0)


def _without_trip_count(model: onnx.ModelProto, condition_given: bool) -> onnx.ModelProto:
    """The outer Loop without M: it runs until its condition is false. `condition_given`: its
    starting condition a graph input, else the stored True its body passes on unchanged."""
    model.graph.node[0].input[0] = ""
    if condition_given:
        [go] = [t for t in model.graph.initializer if t.name == "go"]
        model.graph.initializer.remove(go)
        model.graph.input.append(helper.make_tensor_value_info("go", TensorProto.BOOL, []))
    return model


def test_a_loop_of_unknown_trip_count_is_counted_once_and_said():
    counted = count_with_model(_without_trip_count(nested_loops(2, 10), condition_given=True))
    assert budget.count_node_runs(counted.analyzed.graph) == (1 + 2 + 10 * 2, 1)


def test_a_loop_that_never_ends_is_refused_before_it_runs(tmp_path):
    # long-7's loop:226851: a Loop without M whose body passes its true condition on unchanged
    # (through an Identity) hung `profile`: onnxruntime loads it and runs it forever.
    endless = _without_trip_count(nested_loops(2, 10), condition_given=False)
    with pytest.raises(OnnxFlopsError, match=r"^node 'outer' \(Loop\): no trip count, and a "
                       r"condition that stays true"):
        budget.count_node_runs(count_with_model(endless).analyzed.graph)
    path = tmp_path / "endless.onnx"
    onnx.save(endless, str(path))
    assert_refused(profile_cli(str(path), "--runs", "1", "--warmup", "0"),
                   "onnxruntime would run it forever")
    # neither M nor a condition: the spec's endless loop
    endless.graph.node[0].input[1] = ""
    with pytest.raises(OnnxFlopsError, match="would run it forever"):
        budget.count_node_runs(count_with_model(endless).analyzed.graph)


@pytest.mark.parametrize("levels, trips", [(3, 1000), (30, 2)], ids=["1e9 trips", "30 levels"])
def test_loop_nests_are_refused_by_the_time_budget(tmp_path, levels, trips):
    path = tmp_path / "loops.onnx"
    onnx.save(nested_loops(levels, trips), str(path))
    done = profile_cli(str(path))
    assert_refused(done, "would take at least", "node runs a run", "--max-seconds")


def test_a_scan_over_many_rows_is_refused_by_the_memory_its_trace_takes(tmp_path):
    # 100,000 rows: 200,001 node runs a run, each an event of the 10 warm-up + 10 profiled runs
    # of the profiled session: 4,000,020 events at 7 KiB, 26.7 GiB, and onnxruntime's 0.25 GiB.
    path = tmp_path / "scan.onnx"
    onnx.save(scan_rows(100_000), str(path))
    done = profile_cli(str(path), "--max-memory-gb", "16")
    assert_refused(done, "would need about 27.0 GiB", "4,000,020 trace events",
                   "--max-memory-gb budget 16.0 GiB")


def test_external_weights_over_the_address_space_limit_end_in_exit_2(tmp_path):
    # 2.2 GB of external data under a 4 GB address-space limit: before, a SIGSEGV (exit 139).
    path = external_weights(tmp_path, 550_000_000)
    done = profile_cli(path, "--runs", "2", address_space=4_000_000_000)
    assert_refused(done, "weights 2.0 GiB", "address-space limit 3.7 GiB")


def test_raising_the_budget_lets_the_estimate_through():
    need = budget.Estimate(seconds=700, memory_bytes=1 << 20, flops=0, node_runs=1, runs=1,
                           weights_bytes=0, largest_node="n", largest_node_bytes=0,
                           trace_events=1, unknown_trips=0)
    with pytest.raises(OnnxFlopsError, match=r"at least 700 s .* the 600 s budget"):
        budget.check(need)
    budget.check(need, max_seconds=800)
    budget.check(need, max_seconds=None)
    with pytest.raises(OnnxFlopsError, match=r"about 0.0 GiB .* --max-memory-gb budget"):
        budget.check(need, max_seconds=None, max_memory_bytes=1 << 19)


def test_the_hard_limits_hold_whatever_the_memory_budget(monkeypatch):
    need = budget.Estimate(seconds=1, memory_bytes=3 << 30, flops=0, node_runs=1, runs=1,
                           weights_bytes=0, largest_node="n", largest_node_bytes=0,
                           trace_events=1, unknown_trips=0)
    monkeypatch.setattr(budget, "_hard_room", lambda: (2 << 30, "cgroup memory limit 2.0 GiB"))
    with pytest.raises(OnnxFlopsError, match=r"the 2.0 GiB this process may use \(cgroup"):
        budget.check(need, max_memory_bytes=100 << 30)


def test_a_small_model_under_its_budget_runs(tmp_path):
    path = tmp_path / "loops.onnx"
    onnx.save(nested_loops(2, 3), str(path))
    done = profile_cli(str(path), "--runs", "2", "--warmup", "0", "--profile-runs", "1",
                       "--json")
    assert done.returncode == 0, done.stderr


def test_ceilings_that_would_not_fit_are_refused_before_probing(monkeypatch):
    # The full CPU probes' largest is the copy, 2 · 64 Mi float32 = 512 MiB, and onnxruntime's
    # 256 MiB: 0.75 GiB against 0.5 GiB of room.
    from onnxflops.profiling import ceilings
    from onnxflops.profiling.runtime import SessionConfig

    monkeypatch.setattr(budget, "_hard_room", lambda: (1 << 29, "address-space limit 1.0 GiB"))
    monkeypatch.setattr(ceilings, "_best_time", lambda *a, **k: pytest.fail("probed"))
    with pytest.raises(OnnxFlopsError, match=r"ceilings would need about 0.8 GiB, more than the "
                                             r"0.5 GiB .* --quick .* --no-ceilings"):
        ceilings.measure(SessionConfig(threads=1))


def test_weights_are_their_declared_bytes_and_a_negative_dim_counts_nothing():
    graph = helper.make_graph([], "g", [], [], [
        numpy_helper.from_array(np.zeros((3, 4), np.float32), "a"),  # 12 · 4 = 48 bytes
        numpy_helper.from_array(np.zeros(2, np.int64), "b"),  # 2 · 8 = 16 bytes
        onnx.TensorProto(name="lie", data_type=TensorProto.FLOAT, dims=[-5, 7])])  # 0
    assert budget.weights_bytes(graph) == 48 + 16
