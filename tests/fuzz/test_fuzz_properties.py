"""Mutated models never give a traceback or a negative number: `count` reports (every number
non-negative, every rendering works) or raises OnnxFlopsError; the CLI exits 0/1 with output or 2
with one line. Cases are those of tools/fuzz.py (`--replay SEED:CASE` replays one there)."""

from __future__ import annotations

import random
import tempfile
from pathlib import Path

import onnx
import pytest
from hypothesis import given, strategies as st

import mutator
import oracle

# Older onnx crashes natively on some mutated models (a segfault in onnx 1.19's shape inference
# of a control-flow node): no Python code can catch that. The property holds from onnx 1.23.
pytestmark = pytest.mark.skipif(
    tuple(int(p) for p in onnx.__version__.split(".")[:2]) < (1, 23),
    reason=f"onnx {onnx.__version__} can crash natively on mutated models; fuzzed on 1.23+")

SEEDS = mutator.load_seeds()
NESTED = [name for name in ("loop", "if", "scan") if name in SEEDS]


def _outcome(data: bytes, check) -> tuple[str, str]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "case.onnx"
        path.write_bytes(data)
        return check(path)


def test_seeds_are_committed_and_count():
    assert {"cnn_dynamo", "cnn_legacy", "mlp_dynamo", "mlp_legacy", "loop", "if", "scan"} <= set(SEEDS)
    for name in SEEDS:
        assert _outcome(SEEDS[name], oracle.check_api) == (oracle.OK, ""), name


def test_the_oracle_sees_a_negative_number():
    assert oracle.negatives({"total": {"macs": 3}, "nodes": [{"flops": -1}]}) == [".nodes[0].flops=-1"]
    assert oracle.negatives({"x": float("nan")}) == [".x=nan"]


@given(seed=st.sampled_from(sorted(SEEDS)), case=st.integers(0, 2**32))
def test_api_on_mutated_models(seed, case):
    data, what = mutator.case_bytes(SEEDS, seed, case)
    outcome, where = _outcome(data, oracle.check_api)
    assert outcome in (oracle.OK, oracle.CLEAN), f"{what}: {outcome} {where}"


@given(seed=st.sampled_from(NESTED), case=st.integers(0, 2**32))
def test_api_on_mutated_loop_if_scan_models(seed, case):
    data, what = mutator.case_bytes(SEEDS, seed, case)
    outcome, where = _outcome(data, oracle.check_api)
    assert outcome in (oracle.OK, oracle.CLEAN), f"{what}: {outcome} {where}"


@given(seed=st.sampled_from(sorted(SEEDS)), case=st.integers(0, 2**32),
       options=st.sampled_from([("-b", "2"), ("-b", "2", "--by", "layer", "--json"),
                                ("-b", "1", "--csv"), ("-b", "2", "--markdown", "--by", "node")]))
def test_cli_on_mutated_models(seed, case, options):
    data, what = mutator.case_bytes(SEEDS, seed, case)
    outcome, where = _outcome(data, lambda p: oracle.check_cli(p, *options))
    assert outcome in (oracle.OK, oracle.CLEAN), f"{what}: {outcome} {where}"


@given(seed=st.sampled_from(sorted(SEEDS)), case=st.integers(0, 2**32))
def test_api_on_mutated_bytes(seed, case):
    data, what = mutator.mutate_bytes(SEEDS[seed], random.Random(case))
    outcome, where = _outcome(data, oracle.check_api)
    assert outcome in (oracle.OK, oracle.CLEAN), f"{what}: {outcome} {where}"


@pytest.mark.parametrize("mutation", mutator.STRUCTURAL, ids=lambda f: f.__name__)
def test_each_structural_mutation_changes_the_model(mutation):
    import onnx

    changed = 0
    for case in range(20):
        model = onnx.load_from_string(SEEDS["loop" if case % 2 else "cnn_legacy"])
        before = model.SerializeToString()
        try:
            what = mutation(model, random.Random(case))
        except (ValueError, TypeError, IndexError):
            continue
        changed += bool(what) and model.SerializeToString() != before
    assert changed >= 10
