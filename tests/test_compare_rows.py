"""compare's layer rows show FLOPs where the FLOPs totals differ (hand-built models, no framework)."""

from __future__ import annotations

import onnxflops
from helpers import model, node, weight


def fc(extra_add: bool):
    """Layer `fc`: MatMul 2×8 @ 8×4 (64 MACs, 128 FLOPs) and Relu (8 FLOPs); b adds r + r
    (8 FLOPs more): 136 vs 144 FLOPs, the same MACs and params."""
    nodes = [node("MatMul", ["x", "w"], ["h"], name="fc/MatMul"),
             node("Relu", ["h"], ["r"], name="fc/Relu")]
    if extra_add:
        nodes.append(node("Add", ["r", "r"], ["y"], name="fc/Add"))
    return model(nodes, {"x": [2, 8]}, [weight("w", (8, 4))])


def test_rows_show_flops_and_their_gap_where_the_flops_totals_differ():
    text = onnxflops.compare(fc(False), fc(True)).to_text()
    assert "DIFFERENT: total flops: 136 vs 144" in text
    assert "layers in execution order (MACs, FLOPs, params)" in text
    row = next(line for line in text.splitlines() if line.startswith("fc "))
    assert row.split() == ["fc", "fc", "64", "64", "136", "144", "32", "32", "same", "MACs;",
                           "FLOPs", "+8"]


def test_rows_leave_flops_out_where_the_totals_agree():
    text = onnxflops.compare(fc(True), fc(True)).to_text()
    assert "layers in execution order (MACs, params)" in text
    row = next(line for line in text.splitlines() if line.startswith("fc "))
    assert row.split() == ["fc", "fc", "64", "64", "32", "32", "same"]


def test_compares_random_inputs_get_the_memory_check_profiles_have(monkeypatch):
    """--check-outputs draws its inputs through the profiling's one feed maker: 2**28 × 2 float32
    (2 GiB) on a machine with 1 GiB free is refused in one line before anything is allocated."""
    import pytest

    pytest.importorskip("onnxruntime")  # the feeds are onnxruntime's (not in the core install)
    from onnxflops.errors import OnnxFlopsError
    from onnxflops.profiling import runtime

    monkeypatch.setattr(runtime, "_available_memory", lambda: 2**30)
    big = model([node("Relu", ["x"], ["y"])], {"x": [2**28, 2]})
    with pytest.raises(OnnxFlopsError, match=r"the model's inputs would take 2.0 GiB \(input 'x' "
                                             r"2.0 GiB\), more than this machine can hold"):
        onnxflops.compare(big, big, check_outputs=True)


def test_checked_outputs_of_one_model_against_itself_agree_exactly():
    import pytest

    pytest.importorskip("onnxruntime")  # the outputs are onnxruntime's (not in the core install)
    same = fc(False)
    result = onnxflops.compare(same, same, check_outputs=True)
    assert (result.outputs.max_abs, result.outputs.outputs) == (0.0, 1)


def test_both_sides_are_counted_with_the_exporter_named(monkeypatch):
    """`compare --exporter legacy` converts both models with that exporter for the count, not only
    for --check-outputs (it counted with the default one)."""
    import importlib

    compare_module = importlib.import_module("onnxflops.comparison.compare")

    seen = []
    real = compare_module.count

    def count(model, **options):
        seen.append((options["exporter"], options["unsafe"]))
        return real(model, **options)

    monkeypatch.setattr(compare_module, "count", count)
    onnxflops.compare(fc(False), fc(False), exporter="legacy", unsafe=True)
    assert seen == [("legacy", True), ("legacy", True)]


def stem(channels: int):
    """conv1 (3 → `channels`, 3×3) → Relu → conv2 (`channels` → 16, 3×3) → head (16 → 4, 1×1)
    on a 1×3×8×8 input: a change of conv1's channels changes conv2's MACs and params too."""
    return model([node("Conv", ["x", "w1"], ["a"], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                       name="/stem/conv1/Conv"),
                  node("Relu", ["a"], ["r"], name="/stem/relu/Relu"),
                  node("Conv", ["r", "w2"], ["b"], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                       name="/stem/conv2/Conv"),
                  node("Conv", ["b", "w3"], ["y"], kernel_shape=[1, 1], name="/head/Conv")],
                 {"x": [1, 3, 8, 8]}, [weight("w1", (channels, 3, 3, 3)),
                                       weight("w2", (16, channels, 3, 3)),
                                       weight("w3", (4, 16, 1, 1))])


def test_a_channel_change_is_named_at_the_layer_that_made_it_with_both_output_shapes():
    result = onnxflops.compare(stem(8), stem(6))
    # conv1 + conv2: 64·(27·8 + 72·16) = 87,552 MACs vs 64·(27·6 + 54·16) = 65,664
    assert result.differences[-1] == (
        "stem.conv1+stem.conv2 vs stem.conv1+stem.conv2: macs 87.55 K vs 65.66 K, params "
        "1.37 K vs 1.03 K; first change at stem.conv1: output 1x8x8x8 vs 1x6x8x8")
