"""Measuring under onnxruntime: latency statistics, the executed-to-counted node map through
onnxruntime's fusions, the trace reading, the machine ceilings and the CUDA-absent error."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from helpers import model, node, weight
from onnxflops.cli import main
from onnxflops.profiling import ceilings, fusion, trace

pytest.importorskip("onnxruntime")

ROOT = Path(__file__).resolve().parent.parent

import onnxflops  # noqa: E402  (after the skip: profiling needs onnxruntime)
from onnxflops.profiling import measure as measuring  # noqa: E402


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    """Ceilings are measured afresh in each test's own cache, never read from the user's."""
    monkeypatch.setenv("ONNXFLOPS_CACHE_DIR", str(tmp_path / "cache"))


def layer_norm_nodes(x: str, y: str) -> list[onnx.NodeProto]:
    """LayerNorm spelled as arithmetic, as older exporters write it."""
    return [node("ReduceMean", [x], ["mu"], axes=[-1], name="ln_mean"),
            node("Sub", [x, "mu"], ["d"], name="ln_sub"),
            node("Pow", ["d", "two"], ["d2"], name="ln_pow"),
            node("ReduceMean", ["d2"], ["var"], axes=[-1], name="ln_var"),
            node("Add", ["var", "eps"], ["ve"], name="ln_eps"),
            node("Sqrt", ["ve"], ["sd"], name="ln_sqrt"),
            node("Div", ["d", "sd"], ["n"], name="ln_div"),
            node("Mul", ["n", "gamma"], ["ng"], name="ln_scale"),
            node("Add", ["ng", "beta"], [y], name="ln_shift")]


# Conv(3→8, 3x3, pad 1)+Relu on 1x3x16x16 → Reshape → MatMul(2048→64)+Add → LayerNorm(64).
CONV_MACS = 8 * 16 * 16 * 3 * 3 * 3
MATMUL_MACS = 2048 * 64


@pytest.fixture(scope="module")
def fusable():
    return model(
        [node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], name="conv"),
         node("Relu", ["c"], ["r"], name="relu"),
         node("Reshape", ["r", "shape"], ["f"], name="flatten"),
         node("MatMul", ["f", "W"], ["m"], name="mm"),
         node("Add", ["m", "B"], ["a"], name="bias"),
         *layer_norm_nodes("a", "y")],
        {"x": [1, 3, 16, 16]},
        [weight("w", (8, 3, 3, 3)), weight("b", (8,)), weight("shape", None, np.int64, [1, -1]),
         weight("W", (2048, 64)), weight("B", (64,)), weight("two", None, value=2.0),
         weight("eps", None, value=1e-5), weight("gamma", (64,)), weight("beta", (64,))],
        opset=13)


@pytest.fixture(scope="module")
def profiled(fusable):
    return onnxflops.profile(fusable, runs=15, threads=1, quick=True, profile_runs=3,
                             ceilings=False)


def by_original(prof) -> dict[tuple[str, ...], object]:
    return {tuple(n.original_nodes): n for n in prof.nodes}


def test_latency_statistics_are_sane(profiled):
    lat = profiled.latency.to_dict()
    assert lat["runs"] == 15
    assert 0 < lat["min"] <= lat["median"] <= lat["p90"] <= lat["p99"] <= lat["max"]
    assert profiled.achieved_flops_per_s == pytest.approx(profiled.flops / (lat["median"] / 1e3))


def test_every_counted_flop_lands_on_exactly_one_executed_node(profiled):
    counted = profiled.count
    names = [name for n in profiled.nodes for name in n.original_nodes]
    names += [u.name for u in profiled.unattributed]
    assert sorted(names) == sorted(n.name for n in counted.nodes)
    assert sum(n.flops for n in profiled.nodes) + profiled.unattributed_flops == \
        counted.total.flops
    assert profiled.unattributed_flops == 0


def test_conv_relu_fused_into_one_nchwc_conv(profiled):
    conv = by_original(profiled)[("conv", "relu")]
    # At level "all" onnxruntime runs Conv+Relu as an NCHWc Conv with a Relu activation, then
    # reorders its output back to NCHW: both are the work of the two counted nodes.
    assert conv.op_type == "NchwcConv(Relu)+NchwcReorderOutput"
    assert conv.flops == 2 * CONV_MACS + 8 * 16 * 16 + 8 * 16 * 16  # bias adds, then Relu
    # What the fused kernel moves: input, weights, bias and its output, not the Conv→Relu tensor.
    assert conv.bytes == 4 * (3 * 16 * 16 + 8 * 3 * 3 * 3 + 8 + 8 * 16 * 16)


@pytest.fixture(scope="module")
def nchwc_chain():
    """A dense 3x3 conv, a depthwise one and a pointwise one, each but the last with a Relu."""
    chain = model(
        [node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
         node("Relu", ["c1"], ["r1"], name="relu1"),
         node("Conv", ["r1", "w2"], ["c2"], group=16, pads=[1, 1, 1, 1], name="depthwise"),
         node("Relu", ["c2"], ["r2"], name="relu2"),
         node("Conv", ["r2", "w3"], ["y"], name="pointwise")],
        {"x": [1, 8, 16, 16]},
        [weight("w1", (16, 8, 3, 3)), weight("w2", (16, 1, 3, 3)), weight("w3", (32, 16, 1, 1))],
        opset=13)
    return onnxflops.profile(chain, runs=3, threads=1, warmup=1, profile_runs=2, ceilings=False)


def test_a_chain_of_nchwc_convs_is_one_row_per_conv(nchwc_chain):
    # onnxruntime keeps a chain of convs in its blocked NCHWc layout, renaming every tensor
    # between them; each NCHWc node is named after the tensor it computes, which cuts the chain.
    prof = nchwc_chain
    rows = by_original(prof)
    pixels = 16 * 16
    assert rows[("conv1", "relu1")].flops == 2 * pixels * 16 * 8 * 9 + pixels * 16
    assert rows[("depthwise", "relu2")].flops == 2 * pixels * 16 * 9 + pixels * 16
    assert rows[("pointwise",)].flops == 2 * pixels * 32 * 16
    # The graph input's reorder into the blocked layout computes no counted tensor: it runs in
    # the first conv's row (onnxruntime 1.32 saves it with no name of the input's).
    assert rows[("conv1", "relu1")].op_type == "NchwcReorderInput+NchwcConv(Relu)"


def test_each_row_is_named_by_the_counted_conv_behind_it_not_by_the_kernel(nchwc_chain):
    """onnxruntime runs all three as NchwcConv (with its reorders); their categories come from the
    counted Convs' shapes: 16 groups of one channel over 16 channels, a 1x1 kernel, a 3x3 one."""
    rows = by_original(nchwc_chain)
    assert all("NchwcConv" in rows[k].op_type for k in rows if k[0] in ("conv1", "pointwise"))
    assert {k: rows[k].category for k in rows} == {("conv1", "relu1"): "dense conv",
                                                   ("depthwise", "relu2"): "depthwise conv",
                                                   ("pointwise",): "pointwise conv"}


def test_conv_relu_is_fused_conv_at_extended_level(fusable):
    prof = onnxflops.profile(fusable, runs=3, threads=1, warmup=1, profile_runs=2,
                             opt_level="extended", ceilings=False)
    assert by_original(prof)[("conv", "relu")].op_type == "FusedConv(Relu)"
    assert by_original(prof)[("mm", "bias")].op_type == "Gemm"


def test_matmul_add_fused_into_gemm(profiled):
    gemm = by_original(profiled)[("mm", "bias")]
    assert gemm.op_type == "Gemm"
    assert gemm.name == "mm/MatMulAddFusion"
    assert gemm.flops == 2 * MATMUL_MACS + 64


def test_layer_norm_arithmetic_fused_into_one_layer_normalization(profiled):
    ln = [n for n in profiled.nodes if n.op_type == "LayerNormalization"]
    assert len(ln) == 1
    # Every counted node after the Gemm's output is the LayerNorm's work, whatever the counter
    # rewrote it to.
    before = {"conv", "relu", "flatten", "mm", "bias"}
    assert set(ln[0].original_nodes) == {n.name for n in profiled.count.nodes} - before
    # x, gamma, beta in and y out; plus what LayerNormalization's ONNX function body (opset 13
    # has no LayerNormalization op) reads besides: epsilon and the int64 shape it reshapes to.
    assert ln[0].bytes == 4 * (64 + 64 + 64 + 64) + 4 + 2 * 8


def test_node_times_are_scaled_to_the_unprofiled_latency(profiled):
    assert sum(n.time_ms for n in profiled.nodes) == pytest.approx(profiled.latency.median)
    assert any("scaled by" in w for w in profiled.warnings)
    shares = profiled.by_op_type()
    assert sum(g.latency_share for g in shares.values()) == pytest.approx(1.0)
    assert shares["Gemm"].flops_share == pytest.approx(
        (2 * MATMUL_MACS + 64) / profiled.count.total.flops)


def test_json_has_exactly_the_documented_keys(profiled):
    doc = json.loads(profiled.to_json())
    assert list(doc) == ["summary", "latency_ms", "flops", "achieved_flops_per_s",
                         "peak_flops_per_s", "bandwidth_bytes_per_s", "provider", "threads",
                         "opt_level", "nodes", "by_op_type", "by_category", "unattributed_flops",
                         "warnings"]
    assert list(doc["latency_ms"]) == ["median", "p90", "p99", "min", "max", "runs"]
    assert list(doc["nodes"][0]) == ["name", "op_type", "original_nodes", "flops", "bytes",
                                     "time_ms", "achieved_flops_per_s", "bound", "category"]
    assert doc["threads"] == 1 and doc["provider"] == "cpu" and doc["opt_level"] == "all"


def test_loop_body_is_not_counted_twice():
    body = helper.make_graph(
        [node("MatMul", ["s_in", "W"], ["t"], name="body_mm"),
         node("Tanh", ["t"], ["s_out"], name="body_tanh"),
         node("Identity", ["cond_in"], ["cond_out"], name="body_cond")], "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("s_in", TensorProto.FLOAT, [1, 32])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("s_out", TensorProto.FLOAT, [1, 32])])
    m = model([node("Loop", ["trips", "go", "x"], ["y"], name="loop", body=body)],
              {"x": [1, 32]}, [weight("trips", None, np.int64, 5), weight("go", None, np.bool_, True),
                               weight("W", (32, 32))])
    prof = onnxflops.profile(m, runs=5, warmup=1, profile_runs=3, ceilings=False)
    assert [n.name for n in prof.nodes] == ["loop"]
    assert prof.nodes[0].flops == prof.count.total.flops > 5 * 2 * 32 * 32
    assert prof.nodes[0].time_ms == pytest.approx(prof.latency.median)


def test_model_written_with_a_newer_ir_version_than_onnxruntime_reads(tmp_path, monkeypatch):
    # An onnx newer than the onnxruntime installed beside it (here onnx is made to read IR 99;
    # one it does not read is refused when loaded, test_hostile_input)
    monkeypatch.setattr(onnx, "IR_VERSION", 99)
    m = model([node("Relu", ["x"], ["y"])], {"x": [1, 8]})
    m.ir_version = 99
    prof = onnxflops.profile(m, runs=2, warmup=0, profile_runs=1, ceilings=False)
    assert prof.latency.median > 0


def test_given_arrays_are_fed_and_give_the_shapes(fusable):
    m = model([node("Relu", ["x"], ["y"])], {"x": ["n", 8]})
    prof = onnxflops.profile(m, runs=2, warmup=0, profile_runs=1, ceilings=False,
                             inputs={"x": np.ones((3, 8), np.float32)})
    assert prof.count.inputs == {"x": [3, 8]}
    assert prof.flops == 3 * 8


def test_ceilings_are_measured_once_then_read_from_the_cache(monkeypatch):
    monkeypatch.setattr(ceilings, "_load_per_core", lambda: 0.5)  # as loaded later as now
    config = onnxflops.profiling.runtime.SessionConfig(threads=1)
    first = ceilings.machine_ceilings(config, quick=True)
    assert first.peak_flops_per_s > 1e8 and first.bandwidth_bytes_per_s > 1e8
    assert (ceilings.cache_dir() / "ceilings.json").exists()

    def no_second_measurement(*args):
        raise AssertionError("measured again")

    monkeypatch.setattr(ceilings, "measure", no_second_measurement)
    assert ceilings.machine_ceilings(config, quick=True) == first
    other_threads = onnxflops.profiling.runtime.SessionConfig(threads=2)
    with pytest.raises(AssertionError, match="measured again"):
        ceilings.machine_ceilings(other_threads, quick=True)


def test_peak_is_the_best_of_the_compute_probes(monkeypatch):
    """No one kernel is always the fastest (the CPU provider's NCHWc convolution beats its MatMul
    at some shapes, its MatMul beats it at others): the peak is the best rate over every probe,
    so that no model exceeds it."""
    # FLOP/s of the 3×3 conv, the 1×1 conv and the two MatMuls.
    rates = iter([10e9, 11e9, 9e9, 7e9])

    def timed(model, config, shapes, dtype, runs, seconds, usage):
        if str(shapes) not in flops_of:  # a bandwidth probe
            return 1.0
        return flops_of[str(shapes)] / next(rates)

    probes = ceilings._compute_probes("cpu", 1, "float32")
    flops_of = {str(shapes): flops for _, shapes, flops in probes}
    assert [onnx.load_from_string(m).graph.node[0].op_type for m, _, _ in probes] == \
        ["Conv", "Conv", "MatMul", "MatMul"]
    # Quick: 32 channels 3×3 on 14x14, 128 to 64 channels 1×1 on 7x7, 64x256 by 256x64, 128³.
    assert [flops for _, _, flops in probes] == [2 * 32 * 32 * 9 * 14 * 14, 2 * 128 * 64 * 7 * 7,
                                                 2 * 64 * 256 * 64, 2 * 128 ** 3]
    monkeypatch.setattr(ceilings, "_best_time", timed)
    measured = ceilings.measure(onnxflops.profiling.runtime.SessionConfig(threads=1), quick=True)
    assert measured.peak_flops_per_s == pytest.approx(11e9)


@pytest.mark.parametrize("level", [0, 1], ids=["full", "quick"])
def test_the_compute_probes_store_their_weights_as_a_model_does(level):
    """Fed as an input, a 3×3 convolution's weight keeps onnxruntime off its prepacked NCHWc path
    (122 against 155 GFLOP/s on one core here), and ResNet-50's convolutions, whose weights are
    initializers, ran 14% above that "peak": each probe feeds its first operand only."""
    for model, shapes, _ in ceilings._compute_probes("cpu", level, "float32"):
        graph = onnx.load_from_string(model).graph
        assert [list(t.dims) for t in graph.initializer] == [shapes[1]]
        assert [i.name for i in graph.input] == ["x0"]
        assert graph.node[0].input[:] == ["x0", "x1"]


def test_a_probe_with_stored_weights_runs_in_onnxruntime():
    pytest.importorskip("onnxruntime")
    model, shapes, flops = ceilings._compute_probes("cpu", 1, "float32")[0]
    config = onnxflops.profiling.runtime.SessionConfig(threads=1)
    assert ceilings._best_time(model, config, shapes, "float32", 2, 0.0) > 0


class _Clocks:
    """Each run of a probe takes 1.0 s of wall time (perf_counter, read as it starts and as it
    ends) and 0.25 s of this process's CPU time (process_time, read likewise): other work held
    the core the rest."""

    def __init__(self):
        self.wall = self.cpu = 0.0

    def perf_counter(self):
        self.wall += 1.0
        return self.wall

    def process_time(self):
        self.cpu += 0.25
        return self.cpu


@pytest.mark.parametrize("threads, seconds", [(1, 0.25), (2, 1.0), (None, 1.0)])
def test_a_one_thread_probe_takes_the_cpu_seconds_it_held_the_core(threads, seconds, monkeypatch):
    """Probed at load 1.5/core, a 1-thread peak of 131 GFLOP/s was beaten by ResNet-50's
    convolutions at 142 when the load eased: on one thread a run's CPU seconds are the time it
    computed. With more threads, CPU seconds count spinning too: wall time it is."""
    pytest.importorskip("onnxruntime")
    model, shapes, _ = ceilings._compute_probes("cpu", 1, "float32")[0]
    config = onnxflops.profiling.runtime.SessionConfig(threads=threads)
    monkeypatch.setattr(ceilings, "time", _Clocks())
    usage = []
    assert ceilings._best_time(model, config, shapes, "float32", 2, 0.0, usage) == seconds
    # the share of the CPU the probe had is still over its wall time: 2 runs, 2 s
    assert usage[0][1] == 2.0


def test_bandwidth_is_the_best_of_the_streaming_probes_and_the_copy(monkeypatch):
    """A copy alone (27 GB/s) let a Llama decode step beat its roof: kernels streaming weights
    (a vector times a weight, a sum) read faster than a copy reads and writes."""
    probes = ceilings._bandwidth_probes("cpu", 1, "float32")
    # quick sides 256 and 512: 256·256 + 2·256 = 66,048 and 512·512 + 2·512 = 263,168 floats
    # read and written by the two MatMuls, 512·512 + 1 = 262,145 by the sum, 2·2^20 by the copy.
    assert [(onnx.load_from_string(m).graph.node[0].op_type, moved) for m, _, moved in probes] \
        == [("MatMul", 4 * 66_048), ("MatMul", 4 * 263_168), ("ReduceSum", 4 * 262_145),
            ("Identity", 4 * 2 * 2**20)]
    moved_of = {str(shapes): moved for _, shapes, moved in probes}
    rates = {"MatMul": 40e9, "ReduceSum": 30e9, "Identity": 27e9}
    rates_by_shapes = {str(shapes): rates[onnx.load_from_string(m).graph.node[0].op_type]
                       for m, shapes, _ in probes}
    rates_by_shapes[str(probes[1][1])] = 55e9  # the larger weight streams fastest here

    def timed(model, config, shapes, dtype, runs, seconds, usage):
        if str(shapes) in moved_of:
            return moved_of[str(shapes)] / rates_by_shapes[str(shapes)]
        return 1.0

    monkeypatch.setattr(ceilings, "_best_time", timed)
    measured = ceilings.measure(onnxflops.profiling.runtime.SessionConfig(threads=1), quick=True)
    assert measured.bandwidth_bytes_per_s == pytest.approx(55e9)


@pytest.mark.parametrize("load, more", [(0.5, 1), (1.5, 4), (None, 4)])
def test_probes_run_four_times_as_long_under_load(load, more, monkeypatch):
    """Under load a run seldom has the machine to itself: the best of more runs is nearer what
    the kernel reaches alone (quick: 3 runs of each probe; full: 10 runs and at least 0.25 s of
    each compute probe, 1 s of each bandwidth probe)."""
    asked = []

    def timed(model, config, shapes, dtype, runs, seconds, usage):
        asked.append((runs, seconds))
        return 1.0

    monkeypatch.setattr(ceilings, "_best_time", timed)
    monkeypatch.setattr(ceilings, "_load_per_core", lambda: load)
    ceilings.measure(onnxflops.profiling.runtime.SessionConfig(threads=1), quick=False)
    compute, bandwidth = len(ceilings._compute_probes("cpu", 0, "float32")), 4
    assert asked == [(10 * more, 0.25 * more)] * compute + [(10 * more, 1.0 * more)] * bandwidth


def fake_ceilings(peak, bandwidth, load=0.1, share=1.0):
    return ceilings.Ceilings(peak, bandwidth, "float32", True, "", load, share)


def test_a_ceiling_probed_under_load_is_probed_again_once_the_machine_is_quieter(monkeypatch):
    config = onnxflops.profiling.runtime.SessionConfig(threads=1)
    probes = iter([fake_ceilings(5e9, 2e9, load=3.0, share=0.4),   # while others held the cores
                   fake_ceilings(20e9, 8e9, load=0.2, share=0.98)])  # quiet
    monkeypatch.setattr(ceilings, "measure", lambda *args: next(probes))
    load = [3.0]
    monkeypatch.setattr(ceilings, "_load_per_core", lambda: load[0])
    first = ceilings.machine_ceilings(config, quick=True)
    assert first.probed_under_load and first.peak_flops_per_s == 5e9
    assert ceilings.machine_ceilings(config, quick=True) == first  # as loaded now: kept
    load[0] = 0.2
    second = ceilings.machine_ceilings(config, quick=True)
    assert (second.peak_flops_per_s, second.bandwidth_bytes_per_s) == (20e9, 8e9)
    assert not second.probed_under_load
    assert ceilings.machine_ceilings(config, quick=True) == second  # read from the cache


def test_a_new_probe_never_lowers_a_cached_ceiling(monkeypatch):
    config = onnxflops.profiling.runtime.SessionConfig(threads=1)
    probes = iter([fake_ceilings(20e9, 3e9), fake_ceilings(12e9, 9e9)])
    monkeypatch.setattr(ceilings, "measure", lambda *args: next(probes))
    ceilings.machine_ceilings(config, quick=True)
    again = ceilings.machine_ceilings(config, quick=True, refresh=True)
    assert (again.peak_flops_per_s, again.bandwidth_bytes_per_s) == (20e9, 9e9)


def test_an_old_cache_entry_without_the_load_counts_as_probed_under_load():
    assert ceilings._entry({"peak_flops_per_s": 1e9, "bandwidth_bytes_per_s": 1e9,
                            "dtype": "float32", "quick": True, "measured_at": ""}) \
        .probed_under_load
    assert ceilings._entry({"peak_flops_per_s": -1, "bandwidth_bytes_per_s": 1e9,
                            "dtype": "float32", "quick": True, "measured_at": ""}) is None
    assert ceilings._entry({"what": 1}) is None


def test_the_roofs_are_raised_just_enough_for_what_ran_above_them():
    c = fake_ceilings(100e9, 10e9)  # ridge 10 FLOP/B
    # 1 GFLOP over 10 MB (100 FLOP/B) in 5 ms: 200 GFLOP/s, 2 GB/s: the peak rises to 200 G.
    up = c.raised_to(1e9, 10e6, 5e-3)
    assert (up.peak_flops_per_s, up.bandwidth_bytes_per_s) == (200e9, 10e9)
    # 10 MFLOP over 10 MB (1 FLOP/B) in 0.5 ms: 20 GB/s against 10: the bandwidth rises to 20 G.
    up = c.raised_to(10e6, 10e6, 0.5e-3)
    assert (up.peak_flops_per_s, up.bandwidth_bytes_per_s) == (100e9, 20e9)
    assert up.attainable(10e6, 10e6) == pytest.approx(20e9)


def _ceilings_returning(ceilings_given, monkeypatch) -> list[bool]:
    """Profiling's ceilings are `ceilings_given`; the list records each call's `refresh`."""
    refreshed = []

    def fake(config, dtype="float32", quick=False, refresh=False):
        refreshed.append(refresh)
        return ceilings_given

    monkeypatch.setattr(measuring, "machine_ceilings", fake)
    return refreshed


def test_a_profile_above_a_poisoned_cached_roof_is_probed_again(fusable, monkeypatch):
    """A cached peak probed while other work held the cores is below what the model reaches:
    the profile probes again (here: still too low, as a fake) and raises the roofs, saying so;
    no node and not the model is reported above its roof."""
    poisoned = fake_ceilings(1e3, 1e3, load=4.0, share=0.2)  # 1 kFLOP/s: every node beats it
    refreshed = _ceilings_returning(poisoned, monkeypatch)
    prof = onnxflops.profile(fusable, runs=3, warmup=1, profile_runs=2, threads=1, quick=True)
    assert refreshed == [False, True]
    assert any("(probed again now, under load (load average 4.0 per core, 20% of the CPU)): "
               "the roofs are raised to what they reached" in w for w in prof.warnings)
    assert prof.efficiency <= 1.0 + 1e-9
    assert measuring.above_roof(prof) == []
    for n in prof.nodes:
        if n.bound != "-" and n.achieved_flops_per_s:
            assert n.achieved_flops_per_s <= prof.ceilings.attainable(n.flops, n.bytes) * (1 + 1e-9)


def test_a_roof_probed_minutes_ago_is_raised_without_probing_again(fusable, monkeypatch):
    import time

    fresh = ceilings.Ceilings(1e3, 1e3, "float32", True, time.strftime("%Y-%m-%dT%H:%M:%S"),
                              4.0, 0.2)
    refreshed = _ceilings_returning(fresh, monkeypatch)
    prof = onnxflops.profile(fusable, runs=3, warmup=1, profile_runs=2, threads=1, quick=True)
    assert refreshed == [False]
    assert measuring.above_roof(prof) == [] and prof.ceilings.peak_flops_per_s > 1e3


def test_the_roofs_a_run_reached_are_cached_for_the_next_estimate(fusable, monkeypatch):
    """`llm --hardware cpu` estimates on the cached roofs: a run above them raises them in the
    cache too, or the next estimate is slower than the machine runs (a ratio below 1)."""
    import time

    fresh = ceilings.Ceilings(1e3, 1e3, "float32", True, time.strftime("%Y-%m-%dT%H:%M:%S"),
                              4.0, 0.2)
    _ceilings_returning(fresh, monkeypatch)
    prof = onnxflops.profile(fusable, runs=3, warmup=1, profile_runs=2, threads=1, quick=True)
    key = ceilings._key(onnxflops.profiling.runtime.SessionConfig(threads=1), "float32", True)
    cached = ceilings._entry(ceilings._read(ceilings.cache_dir() / "ceilings.json")[key])
    assert cached.peak_flops_per_s == prof.ceilings.peak_flops_per_s > 1e3
    assert cached.bandwidth_bytes_per_s == prof.ceilings.bandwidth_bytes_per_s


def test_bound_follows_the_ridge_point():
    c = ceilings.Ceilings(100e9, 10e9, "float32", True, "")
    assert c.ridge == 10
    assert c.bound(2000, 100) == "compute"
    assert c.bound(500, 100) == "memory"


def test_profile_with_ceilings_reports_efficiency(fusable):
    prof = onnxflops.profile(fusable, runs=3, warmup=1, profile_runs=2, threads=1, quick=True)
    doc = prof.to_dict()
    assert doc["peak_flops_per_s"] > 0 and doc["bandwidth_bytes_per_s"] > 0
    assert 0 < prof.efficiency == pytest.approx(doc["achieved_flops_per_s"] /
                                                doc["peak_flops_per_s"])
    ridge = prof.ceilings.ridge
    for n in prof.nodes:
        if n.flops:
            assert n.bound == ("compute" if n.flops / n.bytes >= ridge else "memory")


# The trace reader on hand-written traces: a CUDA build with and without kernel events.

def _event(cat, name, ts, dur, **args):
    return {"cat": cat, "name": name, "ts": ts, "dur": dur, "pid": 1, "tid": 1, "args": args}


def _write(tmp_path, events):
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(events))
    return path


def test_trace_takes_cuda_kernel_times_over_launch_times(tmp_path):
    cuda = "CUDAExecutionProvider"
    events = []
    for run, start in enumerate((0, 1000)):
        events += [_event("Session", "model_run", start, 900),
                   _event("Node", "conv_kernel_time", start + 10, 5, provider=cuda),
                   _event("Kernel", "implicit_gemm", start + 20, 300 + run * 100),
                   _event("Kernel", "bias_relu", start + 330, 40),
                   _event("Node", "shape_kernel_time", start + 400, 7,
                          provider="CPUExecutionProvider")]
    times = trace.read_trace(_write(tmp_path, events))
    assert times.source == trace.DEVICE_KERNELS
    assert times.median_us == {"conv": (340 + 440) / 2, "shape": 7}


def test_trace_without_kernel_events_on_cuda_is_end_to_end_only(tmp_path):
    # Shape ops fall back to the CPU even in a CUDA session: their host times alone would
    # leave the CUDA nodes timed at zero.
    events = [_event("Session", "model_run", 0, 900),
              _event("Node", "conv_kernel_time", 10, 5, provider="CUDAExecutionProvider"),
              _event("Node", "shape_kernel_time", 20, 3, provider="CPUExecutionProvider")]
    times = trace.read_trace(_write(tmp_path, events))
    assert times.source == trace.END_TO_END_ONLY and times.median_us == {}


def test_trace_skips_warmup_runs_and_nested_body_events(tmp_path):
    events = [_event("Session", "model_run", 0, 500),
              _event("Node", "loop_kernel_time", 10, 400),  # a warm-up run: left out
              _event("Session", "model_run", 1000, 200),
              _event("Node", "loop_kernel_time", 1010, 100),
              _event("Node", "body_mm_kernel_time", 1020, 30),
              _event("Node", "body_mm_kernel_time", 1060, 30)]
    times = trace.read_trace(_write(tmp_path, events), skip_runs=1)
    assert times.median_us == {"loop": 100}
    assert times.runs == 1


def test_fusion_match_on_hand_built_graphs():
    # onnxruntime fused Conv+Relu, and folded Shape to the constant `s` at load time: the Shape
    # node's group has no executed node, so its work is reported as unattributed.
    counted = [node("Conv", ["x", "w"], ["c"], name="conv"), node("Relu", ["c"], ["r"]),
               node("Shape", ["r"], ["s"], name="shape"), node("Reshape", ["r", "s"], ["f"]),
               node("Gemm", ["f", "W"], ["y"], name="gemm")]
    executed = helper.make_graph(
        [node("FusedConv", ["x", "w"], ["r"], name="fused"),
         node("Reshape", ["r", "s"], ["f"], name="reshape"),
         node("Gemm", ["f", "W"], ["y"], name="gemm")], "g", [], [],
        [helper.make_tensor("s", TensorProto.INT64, [1], [-1])])
    groups = fusion.match(counted, executed)
    assert [(g.counted, g.executed) for g in groups] == [([0, 1], [0]), ([3], [1]), ([4], [2]),
                                                         ([2], [])]


def test_fusion_match_through_the_deployed_graph():
    # Counted: a zero bias built at run time (Shape → Expand), Conv, BatchNorm, Relu, then a
    # MatMul whose numbered output `val_7` names a folded constant in the deployed export. The
    # deployed graph folded the bias and the BatchNorm into the conv (its output takes the
    # BatchNorm's name `bn`); onnxruntime fused the conv and Relu.
    counted = [node("Shape", ["w"], ["val_1"]), node("Expand", ["z", "val_1"], ["val_2"]),
               node("Conv", ["x", "w", "val_2"], ["conv"], name="conv"),
               node("BatchNormalization", ["conv", "g", "b", "m", "v"], ["bn"], name="bn"),
               node("Relu", ["bn"], ["relu"], name="relu"),
               node("MatMul", ["relu", "W"], ["val_7"], name="matmul"),
               node("Add", ["val_7", "B"], ["y"], name="add")]
    deployed = helper.make_graph(
        [node("Conv", ["x", "w_folded", "b_folded"], ["bn"], name="conv_bn"),
         node("Relu", ["bn"], ["relu"], name="relu"),
         node("MatMul", ["relu", "W"], ["val_3"], name="matmul"),
         node("Add", ["val_3", "B"], ["y"], name="add")], "d", [], [],
        [helper.make_tensor("val_7", TensorProto.INT64, [1], [-1])])
    executed = helper.make_graph(
        [node("FusedConv", ["x", "w_folded", "b_folded"], ["relu"], name="fused"),
         node("MatMul", ["relu", "W"], ["val_3"], name="matmul"),
         node("Add", ["val_3", "B"], ["y"], name="add")], "e", [], [])
    groups = fusion.match(counted, executed, deployed)
    # `bn` and `relu` are computed by all three graphs: cut points. `val_7` is a numbered name:
    # the MatMul stays tied to its Add, whatever the deployed graph calls val_7.
    assert [(g.counted, g.deployed, g.executed) for g in groups] == [
        ([0, 1, 2, 3, 4], [0, 1], [0]), ([5, 6], [2, 3], [1, 2])]


def test_the_zero_bias_and_batchnorm_folded_at_export_are_listed_so():
    entries = [measuring.Unattributed(name, op, flops, "") for name, op, flops in (
        ("shape", "Shape", 0), ("conv", "Conv", 100), ("bn", "BatchNormalization", 8),
        ("relu", "Relu", 4))]
    deployed = [node("Conv", ["x", "w"], ["bn"]), node("Relu", ["bn"], ["relu"])]
    assert [e.name for e in measuring._kept_at_export(entries, deployed)] == ["conv", "relu"]
    # MatMul and Add exported as one Gemm: rewritten, not folded; all of it runs.
    rewritten = entries[1:2] + [measuring.Unattributed("add", "Add", 4, "")]
    assert measuring._kept_at_export(rewritten, [node("Gemm", ["a", "b", "c"], ["y"])]) \
        == rewritten


def test_an_onnx_file_runs_as_it_is_whichever_graph_is_asked(capsys, onnx_file, fusable):
    path = onnx_file(fusable)
    flags = ["--runs", "2", "--warmup", "0", "--profile-runs", "1", "--no-ceilings", "--json"]
    for graph in ("deployed", "counted"):
        assert main(["profile", path, "--graph", graph, *flags]) == 0
        result = json.loads(capsys.readouterr().out)
        assert result["unattributed_flops"] == 0 and len(result["nodes"]) >= 3
    with pytest.raises(SystemExit) as refused:
        main(["profile", path, "--graph", "fused", *flags])
    assert refused.value.code == 2


def test_cuda_absent_is_one_clear_line(capsys, onnx_file, fusable):
    import onnxruntime

    if "CUDAExecutionProvider" in onnxruntime.get_available_providers():
        pytest.skip("this machine has CUDA")
    code = main(["profile", onnx_file(fusable), "--provider", "cuda"])
    out, err = capsys.readouterr()
    assert code != 0 and out == ""
    assert len(err.strip().splitlines()) == 1
    assert err.startswith("onnxflops: error: provider 'cuda' is not available")
    assert "pip install onnxruntime-gpu" in err


def test_nodes_onnxruntime_makes_at_load_time_are_timed():
    # onnxruntime expands CastLike to a Cast it names only in the trace, not in the saved graph.
    m = model([node("CastLike", ["zero", "x"], ["z"], name="like"),
               node("Expand", ["z", "shape"], ["bias"], name="expand"),
               node("Add", ["x", "bias"], ["y"], name="add")],
              {"x": [2, 8]}, [weight("zero", None, value=0.0),
                              weight("shape", None, np.int64, [8])])
    prof = onnxflops.profile(m, runs=3, warmup=1, profile_runs=2, ceilings=False)
    assert not any("not in onnxruntime's optimized graph" in w for w in prof.warnings)
    # The counter sees a constant zero bias (CastLike reads only x's type), so the Add is the
    # only counted node; onnxruntime computes the bias at each run, in the Add's group.
    [group] = prof.nodes
    assert group.original_nodes == ["add"]
    assert re.fullmatch(r"Cast_\d+\+expand\+add", group.name) and group.time_ms > 0


def test_rollup_by_layer_and_share_of_the_roofline():
    m = model([node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], name="/block1/conv/Conv"),
               node("Relu", ["c"], ["r"], name="/block1/relu/Relu"),
               node("Flatten", ["r"], ["f"], name="/head/flatten/Flatten"),
               node("Gemm", ["f", "fc"], ["y"], transB=1, name="/head/fc/Gemm")],
              {"x": [1, 4, 8, 8]}, [weight("w", (8, 4, 3, 3)), weight("fc", (10, 512))])
    prof = onnxflops.profile(m, runs=3, warmup=1, profile_runs=2, threads=1, quick=True)
    layers = prof.by_layer()
    assert layers["block1.conv"].flops == 2 * 8 * 8 * 8 * 4 * 9 + 8 * 8 * 8  # Conv, then Relu
    assert layers["head.fc"].flops == 2 * 512 * 10
    assert sum(g.time_ms for g in layers.values()) == pytest.approx(prof.latency.median)
    header, rows = prof.table_rows()
    gemm = next(r for r, n in zip(rows, sorted(prof.nodes, key=lambda n: -n.time_ms))
                if n.original_nodes == ["/head/fc/Gemm"])
    n = next(n for n in prof.nodes if n.original_nodes == ["/head/fc/Gemm"])
    roof = min(prof.ceilings.peak_flops_per_s,
               n.flops / n.bytes * prof.ceilings.bandwidth_bytes_per_s)
    assert float(gemm[header.index("% of roof")]) == pytest.approx(
        100 * n.achieved_flops_per_s / roof, abs=0.06)


def test_without_fusion_each_executed_region_still_maps_back(fusable):
    prof = onnxflops.profile(fusable, runs=3, warmup=1, profile_runs=2, opt_level="disable",
                             ceilings=False)
    groups = by_original(prof)
    assert groups[("conv",)].op_type == "Conv" and groups[("relu",)].op_type == "Relu"
    assert groups[("mm",)].op_type == "MatMul" and groups[("bias",)].op_type == "Add"
    # The LayerNorm arithmetic runs as the nine nodes the model has; the counter saw it as one
    # LayerNormalization (written as its function body): one group holds both sides.
    [ln] = [n for n in prof.nodes if n.name.startswith("ln_mean")]
    assert ln.name == "ln_mean+8 more"
    assert ln.op_type == "ReduceMean+Sub+Pow+Add+Sqrt+Div+Mul"
    assert set(ln.original_nodes) == {n.name for n in prof.count.nodes} - {
        "conv", "relu", "flatten", "mm", "bias"}


def test_counting_does_not_import_onnxruntime(onnx_file):
    path = onnx_file(model([node("Relu", ["x"], ["y"])], {"x": [1, 8]}))
    script = (f"import sys, onnxflops; onnxflops.count({path!r}); "
              "sys.exit('onnxruntime' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", script], cwd=ROOT).returncode == 0


def test_missing_weights_file_is_one_clear_line(tmp_path, capsys):
    path = tmp_path / "m.onnx"
    onnx.save(model([node("MatMul", ["x", "w"], ["y"])], {"x": [1, 64]}, [weight("w", (64, 64))]),
              str(path), save_as_external_data=True, location="m.data", size_threshold=0)
    (tmp_path / "m.data").unlink()
    code = main(["profile", str(path)])
    err = capsys.readouterr().err
    assert code != 0 and len(err.strip().splitlines()) == 1
    assert err.startswith(f"onnxflops: error: {path}: cannot read its weights to run it")
