"""The command line: reports in every format, and one clear line with a non-zero exit on bad input."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys

import onnx
import pytest

from helpers import model, node, weight
from onnxflops.cli import main


@pytest.fixture
def dynamic_cnn(onnx_file):
    m = model([node("Conv", ["input", "w", "b"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                    name="/features/conv1/Conv"),
               node("Relu", ["c"], ["r"], name="/features/relu/Relu"),
               node("GlobalAveragePool", ["r"], ["p"], name="/pool/GlobalAveragePool"),
               node("Flatten", ["p"], ["f"], name="/head/Flatten"),
               node("Gemm", ["f", "fc.w", "fc.b"], ["logits"], transB=1, name="/head/fc/Gemm")],
              {"input": ["batch", 3, "height", "width"]},
              [weight("w", (4, 3, 3, 3)), weight("b", (4,)), weight("fc.w", (10, 4)),
               weight("fc.b", (10,))])
    return onnx_file(m, "cnn.onnx")


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def expected_macs(h: int, w: int) -> int:
    return h * w * 4 * 27 + 4 * 10


def test_json_document_has_the_stable_keys(capsys, dynamic_cnn):
    code, out, _ = run(capsys, "count", dynamic_cnn, "--input", "input=2x3x8x6", "--json")
    doc = json.loads(out)
    assert code == 0
    assert set(doc) == {"model", "convention", "inputs", "total", "by_op_type", "by_layer",
                        "by_category", "nodes", "constant_work", "foldable", "unused_params",
                        "uncosted", "warnings"}
    assert set(doc["total"]) == {"macs", "flops", "int_ops", "params", "unused_params", "buffers",
                                 "bytes_read", "bytes_written"}
    assert doc["inputs"] == {"input": [2, 3, 8, 6]}
    assert doc["total"]["macs"] == 2 * expected_macs(8, 6)
    assert doc["total"]["params"] == 4 * 27 + 4 + 40 + 10
    first = doc["nodes"][0]
    assert {"name", "op_type", "layer", "category", "macs", "flops", "int_ops", "params",
            "bytes_read", "bytes_written", "input_shapes", "output_shapes"} <= set(first)
    assert first["layer"] == "features.conv1" and first["category"] == "contraction"
    assert set(doc["by_layer"]) == {"features.conv1", "features.relu", "pool", "head",
                                    "head.fc"}
    assert doc["by_category"]["contraction"]["macs"] == doc["total"]["macs"]


def test_batch_binds_the_leading_dim_only(capsys, dynamic_cnn):
    code, _, err = run(capsys, "count", dynamic_cnn, "--batch", "3")
    assert code == 2
    assert err.strip() == ("onnxflops: error: input 'input' dim 2 ('height') is dynamic: bind "
                           "it with --input input=3x3xNxN")


def test_csv_has_a_row_per_node(capsys, dynamic_cnn):
    _, out, _ = run(capsys, "count", dynamic_cnn, "-i", "input=1x3x4x4", "--csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [r["op_type"] for r in rows] == ["Conv", "Relu", "GlobalAveragePool", "Flatten", "Gemm"]
    assert int(rows[0]["macs"]) == 4 * 4 * 4 * 27


@pytest.mark.parametrize("by", ["node", "op", "layer", "category"])
def test_tables(capsys, dynamic_cnn, by):
    code, out, _ = run(capsys, "count", dynamic_cnn, "-i", "input=1x3x4x4", "--by", by)
    assert code == 0
    assert "MACs" in out and "total" in out
    markdown = run(capsys, "count", dynamic_cnn, "-i", "input=1x3x4x4", "--by", by,
                   "--markdown")[1]
    assert sum(line.startswith("|---") for line in markdown.splitlines()) == 1


def test_how_to_give_an_input_is_said_in_flags_on_the_command_line_and_in_python_in_python(
        capsys, dynamic_cnn):
    import onnxflops

    code, _, err = run(capsys, "count", dynamic_cnn, "--batch", "2")
    assert code == 2
    assert err.strip().endswith("bind it with --input input=2x3xNxN")
    with pytest.raises(onnxflops.OnnxFlopsError) as raised:
        onnxflops.count(dynamic_cnn, batch=2)
    assert str(raised.value).endswith("bind it with inputs={'input': (2, 3, N, N)}")
    with pytest.raises(onnxflops.OnnxFlopsError) as raised:
        onnxflops.count(dynamic_cnn)
    assert str(raised.value).endswith("inputs={'input': (N, 3, N, N)} or batch=N")
    with pytest.raises(onnxflops.OnnxFlopsError, match="^batch: 0 is out of range"):
        onnxflops.count(dynamic_cnn, batch=0)
    assert run(capsys, "count", dynamic_cnn, "--batch", "0")[2].startswith(
        "onnxflops: error: --batch: 0 is out of range")


def test_the_commands_first_table_ranks_op_types_as_print_report_does(capsys, dynamic_cnn):
    import re

    import onnxflops

    code, out, _ = run(capsys, "count", dynamic_cnn, "-i", "input=1x3x4x4")
    assert code == 0
    printed = str(onnxflops.count(dynamic_cnn, inputs={"input": (1, 3, 4, 4)}))
    row = re.compile(r"^(\w+) .* (\d+\.\d)%", re.MULTILINE)
    # FLOPs of 3,738: Conv 2·(16·4·27) + 64 bias = 3,520; Gemm 2·40 + 10 = 90; Relu and
    # GlobalAveragePool 64 each; Flatten 0 (the table's total row after them)
    ranked = [("Conv", "94.2"), ("Gemm", "2.4"), ("Relu", "1.7"), ("GlobalAveragePool", "1.7"),
              ("Flatten", "0.0")]
    assert row.findall(out) == [*ranked, ("total", "100.0")]
    assert row.findall(printed) == ranked


@pytest.mark.parametrize("argv, message", [
    (["--input", "image=1x3x8x8"], "model has no input 'image'; its inputs are: input"),
    (["--input", "inptu=1x3x8x8"], "model has no input 'inptu' (did you mean 'input'?); its "
                                   "inputs are: input"),
    (["--input", "input=1x3xeightx8"], "malformed shape '1x3xeightx8'"),
    (["--input", "input=1x3x8"], "given shape 1x3x8 has rank 3, the model declares"),
    (["--input", "input=1x4x8x8"], "input 'input': dim 1 is fixed to 3 in the model, but 4"),
    ([], "input 'input' dim 0 ('batch') is dynamic: bind it with --input input=Nx3xNxN or "
         "--batch N"),
])
def test_bad_inputs_give_one_line(capsys, dynamic_cnn, argv, message):
    code, out, err = run(capsys, "count", dynamic_cnn, *argv)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1
    assert message in err


def test_truncated_and_foreign_files(capsys, tmp_path, dynamic_cnn):
    truncated = tmp_path / "truncated.onnx"
    truncated.write_bytes(open(dynamic_cnn, "rb").read()[:200])
    text = tmp_path / "notes.onnx"
    text.write_text("these are not the weights you are looking for\n")
    for path in (truncated, text):
        code, _, err = run(capsys, "count", str(path))
        assert code == 2
        assert err.startswith(f"onnxflops: error: {path}: not a readable ONNX model")
        assert len(err.strip().splitlines()) == 1
    code, _, err = run(capsys, "count", str(tmp_path / "absent.onnx"))
    assert code == 2 and "absent.onnx: no such file" in err


def test_uncosted_nodes_make_the_exit_code_non_zero(capsys, tmp_path):
    op = onnx.helper.make_node("Mystery", ["x"], ["y"], domain="example.custom", name="m1")
    m = onnx.helper.make_model(
        onnx.helper.make_graph([op], "g", [onnx.helper.make_tensor_value_info("x", 1, [2])],
                               [onnx.helper.make_tensor_value_info("y", 1, [2])]),
        opset_imports=[onnx.helper.make_opsetid("", 17),
                       onnx.helper.make_opsetid("example.custom", 1)])
    path = tmp_path / "custom.onnx"
    onnx.save(m, str(path))
    code, out, err = run(capsys, "count", str(path))
    assert code == 1
    assert "UNCOSTED m1 (Mystery): no cost rule for example.custom::Mystery" in out
    assert err == ""  # the table says it; no Python warning repeats it


def test_a_real_process_prints_no_traceback(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x00\x01garbage")
    done = subprocess.run([sys.executable, "-m", "onnxflops.cli", "count", str(bad)],
                          capture_output=True, text=True)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1


@pytest.mark.slow
def test_count_converts_a_factory_spec_with_the_chosen_exporter(capped):
    pytest.importorskip("torch")
    done = capped(["python", "-m", "onnxflops.cli", "count", "onnxflops.models.torch_models:mlp",
                   "--input", "input=1x64", "--exporter", "legacy", "--json"])
    assert done.returncode == 0, done.stderr
    total = json.loads(done.stdout)["total"]
    assert total["macs"] == 64 * 128 + 128 * 64 + 64 * 10
    assert total["params"] == (64 * 128 + 128) + (128 * 64 + 64) + (64 * 10 + 10)


def test_counting_loads_no_measuring_comparing_or_other_command_code(dynamic_cnn):
    script = ("import sys; from onnxflops.cli import main; main(sys.argv[1:]); "
              "print(' '.join(sys.modules), file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", script, "count", dynamic_cnn, "--input",
                           "input=1x3x8x8"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    loaded = set(done.stderr.split())
    assert "onnxflops.commands.count" in loaded
    assert not loaded & {"onnxflops.comparison.compare", "onnxflops.profiling.measure",
                         "onnxflops.profiling.runtime", "onnxflops.html.page", "onnxruntime",
                         "difflib", "statistics", "onnxflops.commands.compare",
                         "onnxflops.commands.profile", "onnxflops.commands.report"}


def test_the_package_names_the_functions_even_once_their_modules_are_loaded():
    script = ("import onnxflops.comparison.compare, onnxflops.profiling.measure, onnxflops; "
              "from onnxflops import Comparison, Profile; "
              "print(onnxflops.compare.__qualname__, onnxflops.profile.__qualname__, "
              "onnxflops.profiling.profile.__qualname__, Comparison.__name__, Profile.__name__)")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.stdout.split() == ["compare", "profile", "profile", "Comparison", "Profile"]


def test_version_is_the_installed_distributions(capsys, monkeypatch):
    import importlib.metadata
    monkeypatch.setattr(importlib.metadata, "version", lambda name: {"onnxflops": "9.8.7"}[name])
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out == "onnxflops 9.8.7\n"


def test_version_falls_back_to_the_packages_own_when_not_installed(capsys, monkeypatch):
    import importlib.metadata

    import onnxflops

    def not_installed(name):
        raise importlib.metadata.PackageNotFoundError(name)
    monkeypatch.setattr(importlib.metadata, "version", not_installed)
    monkeypatch.setattr(onnxflops, "__version__", "1.2.3")
    with pytest.raises(SystemExit):
        main(["--version"])
    assert capsys.readouterr().out == "onnxflops 1.2.3\n"


@pytest.mark.parametrize("suffix, missing, extra", [(".keras", "keras", "keras"),
                                                   (".pt2", "torch", "torch")])
def test_a_missing_framework_names_the_extra_that_installs_it(tmp_path, capsys, monkeypatch,
                                                             suffix, missing, extra):
    for module in ("keras", "tensorflow", "tf2onnx", "torch"):
        monkeypatch.setitem(sys.modules, module, None)  # what `import` finds when not installed
    path = tmp_path / f"model{suffix}"
    path.write_bytes(b"")
    code, out, err = run(capsys, "count", str(path))
    assert (code, out) == (2, "")
    assert err == (f"onnxflops: error: {path}: converting it needs {missing}: "
                   f"pip install 'onnxflops[{extra}]'\n")


def test_counting_an_onnx_file_imports_neither_tensorflow_nor_torch(onnx_file):
    path = onnx_file(model([node("Relu", ["x"], ["y"])], {"x": [2]}), "relu.onnx")
    code = ("import sys, onnxflops; onnxflops.count(sys.argv[1]); "
            "print(sorted({'tensorflow', 'torch', 'keras', 'tf2onnx'} & set(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code, path],
                         capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize("command, collected", [("count", False), ("profile", False),
                                                ("survey", True)])
def test_a_command_on_one_model_runs_with_the_cyclic_collector_paused(monkeypatch, command,
                                                                      collected):
    """A command on one model ends with its process: the collector, which would walk the
    framework's objects again and again to free nothing, is paused while it runs; the survey's
    long-lived parent keeps it."""
    import gc

    from onnxflops import cli

    seen = []
    monkeypatch.setattr(sys, "argv", ["onnxflops", command, "model.onnx"])
    monkeypatch.setattr(cli, "main", lambda argv: seen.append((argv, gc.isenabled())) or 0)
    exits = []
    monkeypatch.setattr(cli.os, "_exit", exits.append)
    assert gc.isenabled()
    cli.run()
    assert seen == [([command, "model.onnx"], collected)] and exits == [0]
    assert gc.isenabled()  # on again after
