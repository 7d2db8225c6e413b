"""Converters: counts independent of weight values and exporter; safe loading; one-line errors."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import onnxflops
from onnxflops.errors import DataPathWarning
from onnxflops.cli import main

MODELS = "onnxflops.models."  # factory specs of the reference architectures

keras = pytest.importorskip("keras")
torch = pytest.importorskip("torch")
from onnxflops.converters import keras_to_onnx, torch_to_onnx  # noqa: E402

nn = torch.nn


def keras_cnn():
    """Conv without bias → BatchNorm → Dense: Grappler folds fresh BN and drops a zero bias."""
    x = keras.Input((8, 8, 3), name="x")
    y = keras.layers.Conv2D(4, 3, use_bias=False, name="conv")(x)
    y = keras.layers.BatchNormalization(name="bn")(y)
    y = keras.layers.Flatten()(keras.layers.ReLU()(y))
    return keras.Model(x, keras.layers.Dense(5, name="dense")(y), name="keras_cnn")


# conv 4×6×6 outputs × 27 taps; BN 4·144 + 2·4; ReLU 144; dense 144·5 + bias 5
KERAS_CNN = {"macs": 144 * 27 + 144 * 5, "flops": 2 * (3_888 + 720) + 584 + 144 + 5,
             "params": 108 + 8 + 725, "buffers": 8}


def totals(report) -> dict:
    return {k: getattr(report.total, k) for k in KERAS_CNN}


def randomize_keras(model, seed=1):
    rng = np.random.default_rng(seed)
    for v in model.weights:
        v.assign(rng.uniform(0.5, 1.5, v.shape).astype("float32"))


class TestWeightValuesDoNotMatter:
    def test_fresh_batchnorm_and_zero_bias_count_like_random_ones_in_keras(self):
        model = keras_cnn()
        fresh = totals(onnxflops.count(model))
        randomize_keras(model)
        assert fresh == totals(onnxflops.count(model)) == KERAS_CNN

    def test_converting_with_the_real_fresh_weights_would_lose_the_bias_and_batchnorm(self):
        # What the stand-in weights protect against: Grappler simplifies by value.
        real = totals(onnxflops.count(keras_to_onnx(keras_cnn(), keep_weights=True)))
        assert real["flops"] < KERAS_CNN["flops"]

    @pytest.mark.parametrize("exporter", ["dynamo", "legacy"])
    def test_zero_biases_and_fresh_batchnorm_count_like_random_ones_in_torch(self, exporter):
        module = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(),
                               nn.Linear(144, 5))
        with torch.no_grad():
            module[0].bias.zero_()
            module[4].bias.zero_()
        zero = totals(onnxflops.count(torch_to_onnx(module, (1, 3, 8, 8), exporter=exporter)))
        with torch.no_grad():
            for t in list(module.parameters()) + [module[1].running_mean, module[1].running_var]:
                t.uniform_(0.5, 1.5)
        random = totals(onnxflops.count(torch_to_onnx(module, (1, 3, 8, 8), exporter=exporter)))
        assert zero == random
        assert zero["params"] == sum(p.numel() for p in module.parameters())

    def test_layers_that_merely_hold_equal_weights_are_not_merged(self):
        module = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 4))
        with torch.no_grad():
            for layer in module:
                layer.weight.fill_(0.5)
                layer.bias.fill_(0.25)
        counted = onnxflops.count(torch_to_onnx(module, (1, 4), exporter="legacy"))
        assert counted.total.params == 40
        merged = onnxflops.count(torch_to_onnx(module, (1, 4), exporter="legacy",
                                               keep_weights=True))
        assert merged.total.params == 20  # the TorchScript exporter shares equal initializers


@pytest.mark.parametrize("rank", [2, 3])
def test_batchnorm_after_dense_or_conv1d_counts_like_torch_batchnorm1d(rank):
    layers = keras.layers
    if rank == 2:
        keras_model = keras.Sequential([keras.Input((16,)), layers.Dense(8),
                                        layers.BatchNormalization()])
        module, shape, elements = nn.Sequential(nn.Linear(16, 8), nn.BatchNorm1d(8)), (1, 16), 8
    else:
        keras_model = keras.Sequential([keras.Input((10, 6)), layers.Conv1D(8, 3),
                                        layers.BatchNormalization()])
        module, shape, elements = nn.Sequential(nn.Conv1d(6, 8, 3), nn.BatchNorm1d(8)), \
            (1, 6, 10), 8 * 8
    ours, theirs = onnxflops.count(keras_model), onnxflops.count(module, inputs=(shape,))
    assert totals(ours) == totals(theirs)
    batch_norm = next(n for n in ours.nodes if n.op_type == "BatchNormalization")
    assert (batch_norm.flops, batch_norm.params, batch_norm.buffers) == (4 * elements + 16, 16, 16)


class TestSharedWeightsStayShared:
    def test_a_tied_torch_weight_is_one_parameter_for_both_exporters(self):
        first, second = nn.Linear(6, 6), nn.Linear(6, 6)
        second.weight = first.weight
        module = nn.Sequential(first, nn.ReLU(), second)
        for exporter in ("dynamo", "legacy"):
            report = onnxflops.count(torch_to_onnx(module, (1, 6), exporter=exporter))
            assert report.total.params == 36 + 6 + 6 == sum(p.numel() for p in module.parameters())

    def test_a_keras_layer_applied_twice_is_counted_once(self):
        x = keras.Input((6,))
        dense = keras.layers.Dense(6)
        model = keras.Model(x, dense(dense(x)))
        report = onnxflops.count(model)
        assert (report.total.macs, report.total.params) == (2 * 36, 42) == (72, model.count_params())


def test_conversion_leaves_the_models_weights_and_mode_as_they_were():
    model = keras_cnn()
    randomize_keras(model, seed=3)
    before = [w.numpy().copy() for w in model.weights]
    keras_to_onnx(model)
    assert all(np.array_equal(a, w.numpy()) for a, w in zip(before, model.weights))
    module = nn.Sequential(nn.Linear(3, 3), nn.BatchNorm1d(3)).train()
    state = {k: v.clone() for k, v in module.state_dict().items()}
    torch_to_onnx(module, (2, 3))
    assert module.training
    assert all(torch.equal(state[k], v) for k, v in module.state_dict().items())


class TestInputs:
    def test_keras_batch_is_bound_to_one_unless_told(self):
        model = keras_cnn()
        one = onnxflops.count(model).total.macs
        assert onnxflops.count(keras_to_onnx(model, batch=4)).total.macs == 4 * one
        assert onnxflops.count(model, inputs={"x": (2, 8, 8, 3)}).total.macs == 2 * one

    def test_torch_inputs_as_shapes_tensors_or_by_argument_name(self):
        module = nn.Linear(8, 2)
        by_shape = onnxflops.count(module, inputs=((3, 8),)).total.macs
        by_tensor = onnxflops.count(module, inputs=(torch.ones(3, 8),)).total.macs
        by_name = onnxflops.count(module, inputs={"input": (3, 8)}).total.macs
        assert by_shape == by_tensor == by_name == 3 * 8 * 2

    def test_torch_arguments_by_name_in_any_order_the_others_at_their_defaults(self):
        class Masked(nn.Module):
            def __init__(self):
                super().__init__()
                self.linear = nn.Linear(8, 4)

            def forward(self, x, cache=None, mask=None, scale: float = 2.0):
                y = self.linear(x) * scale
                return {"y": y if mask is None else y * mask, "cache": object()}

        x, mask = torch.ones(3, 8), torch.ones(3, 4)
        report = onnxflops.count(Masked(), inputs={"mask": mask, "x": x})
        # the linear 3·8·4 MACs and bias 12; × scale and × mask, 12 each
        assert (report.total.macs, report.total.flops) == (96, 2 * 96 + 12 + 12 + 12)
        assert report.inputs.keys() == {"x", "mask"}

    def test_a_missing_torch_argument_is_named_with_forwards_arguments(self):
        class Pair(nn.Module):
            def forward(self, a, b, c=None):
                return a + b

        with pytest.raises(onnxflops.OnnxFlopsError,
                           match=r"forward\(\) needs 'b', not given: give it, e\.g\. "
                                 r"inputs=\{'b': shape\} \(arguments: a, b, c; given: a\)"):
            onnxflops.count(Pair(), inputs={"a": (2,)})
        with pytest.raises(onnxflops.OnnxFlopsError, match="forward\\(\\) has no argument 'd'"):
            onnxflops.count(Pair(), inputs={"a": (2,), "b": (2,), "d": (2,)})

    def test_a_keras_model_with_dict_inputs(self):
        tokens = keras.Input((6,), name="tokens")
        weights = keras.Input((6,), name="weights")
        model = keras.Model({"weights": weights, "tokens": tokens},
                            keras.layers.Dense(3)(tokens * weights))
        report = onnxflops.count(model, inputs={"tokens": (2, 6), "weights": (2, 6)})
        assert (report.total.macs, report.total.params) == (2 * 6 * 3, 6 * 3 + 3)


class TestExporterFallback:
    class DataDependent(nn.Module):
        """Python control flow on a value: torch.export cannot trace it, TorchScript tracing can."""

        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(4, 4)

        def forward(self, x):
            return self.linear(x) if x.sum() > 0 else x

    def test_a_branch_on_data_is_traced_at_the_example_with_a_warning(self, capfd):
        # torch.export cannot decide the branch without the data: traced again with the example's
        # values (the branch it takes), as the legacy exporter would, and said so
        x = torch.ones(2, 4)
        with pytest.warns(DataPathWarning, match=r"DataDependent': a size or a branch it reads from its "
                                                 r"inputs' values .* is taken at the example"):
            report = onnxflops.count(self.DataDependent(), inputs=(x,))
        assert report.total.macs == 2 * 4 * 4
        assert capfd.readouterr().err == ""  # no traceback logged by torch.export

    def test_both_failing_is_one_line_naming_the_cause_once(self):
        class Broken(nn.Module):
            def forward(self, x):
                raise ValueError("no way")

        with pytest.raises(onnxflops.OnnxFlopsError) as error:
            torch_to_onnx(Broken(), (2,))
        message = str(error.value)
        assert "\n" not in message
        # Both said the same: told once, with where the model's code said it.
        assert re.fullmatch(r"PyTorch model 'Broken': at test_converters\.py:\d+: no way", message)

    def test_both_failing_differently_is_one_line_naming_the_first_the_rest_in_details(self):
        class Broken(nn.Module):
            def forward(self, x):
                if torch.jit.is_tracing():
                    raise ValueError("traced")
                raise ValueError("dynamo cannot trace this at all")

        with pytest.raises(onnxflops.OnnxFlopsError) as error:
            torch_to_onnx(Broken(), (2,))
        message = str(error.value)
        assert "\n" not in message
        assert message.endswith(": dynamo cannot trace this at all")  # the exporter asked for
        assert "ValueError: traced" in error.value.details  # the fallback's, for --debug


class TestParamsAsTheFrameworkDefinesThem:
    def test_a_class_token_through_expand_and_concat_is_a_parameter(self):
        class ClassToken(nn.Module):
            def __init__(self):
                super().__init__()
                self.token = nn.Parameter(torch.ones(1, 1, 8))
                self.register_buffer("offsets", torch.ones(8))  # a buffer, not a parameter

            def forward(self, x):
                token = self.token.expand(x.shape[0], -1, -1)
                return torch.cat([token, x], dim=1) + self.offsets

        for exporter in ("dynamo", "legacy"):
            report = onnxflops.count(torch_to_onnx(ClassToken(), (2, 3, 8), exporter=exporter))
            assert (report.total.params, report.total.buffers) == (8, 8), exporter

    def test_keras_non_trainable_weights_are_buffers_and_a_table_read_in_part_counts_whole(self):
        class Positions(keras.layers.Layer):
            def build(self, shape):
                self.table = self.add_weight(shape=(50, 4), name="table")
                self.scale = self.add_weight(shape=(4,), name="scale", trainable=False)

            def call(self, x):  # TensorFlow folds the 2 rows read into a constant of their own
                return x * self.scale + self.table[:x.shape[1]]

        x = keras.Input((2, 4), name="x")
        model = keras.Model(x, keras.layers.Dense(3)(Positions()(x)))
        report = onnxflops.count(model)
        assert report.total.params == 50 * 4 + 4 * 3 + 3
        assert report.total.buffers == 4  # as torch calls a non-learned tensor


@pytest.mark.parametrize("exporter", ["dynamo", "legacy"])
def test_an_rnns_first_step_on_its_zero_state_is_work_of_the_network(exporter):
    """torch.export unrolls nn.RNN: step 1 multiplies h0 = zeros by W_hh, every input constant.
    5 steps × (8·16 input + 16·16 recurrent) MACs, as the RNN op and Keras's SimpleRNN count."""
    module = nn.RNN(8, 16, batch_first=True)
    report = onnxflops.count(torch_to_onnx(module, (1, 5, 8), exporter=exporter))
    assert report.total.macs == 5 * (8 * 16 + 16 * 16)
    assert report.constant_work.macs == 0


class TestErrors:
    def test_a_tensorflow_error_is_reported_by_its_last_line(self):
        with pytest.raises(onnxflops.OnnxFlopsError, match="incompatible with the layer"):
            keras_to_onnx(keras_cnn(), inputs={"x": (1, 10, 10, 3)})

    def test_an_open_dim_names_the_input(self):
        x = keras.Input((None, 8), name="tokens")
        model = keras.Model(x, keras.layers.Dense(2)(x))
        with pytest.raises(onnxflops.OnnxFlopsError, match="input 'tokens' has unknown dim 1"):
            keras_to_onnx(model)

    def test_a_tensorflow_op_without_onnx_conversion_names_the_op_and_layer(self):
        import tensorflow as tf

        x = keras.Input((4,))
        model = keras.Model(x, keras.layers.Lambda(tf.math.lgamma, name="log_gamma")(x))
        with pytest.raises(onnxflops.OnnxFlopsError, match=r"op Lgamma in '.*log_gamma"):
            keras_to_onnx(model)

    @pytest.mark.parametrize("exporter,op", [("dynamo", "aten._linalg_eigh"),
                                             ("legacy", "aten.linalg_eigh")])  # one spelling
    def test_a_torch_op_without_onnx_conversion_is_named(self, exporter, op, capfd):
        class Eigen(nn.Module):
            def forward(self, x):
                return torch.linalg.eigh(x @ x.T)[0]

        with pytest.raises(onnxflops.OnnxFlopsError,
                           match=f"no ONNX translation of {op.replace('.', '[.]')}$") as error:
            torch_to_onnx(Eigen(), (4, 4), exporter=exporter)
        assert "\n" not in str(error.value)
        assert capfd.readouterr().out == ""  # no graph dump from the exporter

    def test_a_torch_module_needs_its_inputs(self):
        with pytest.raises(onnxflops.OnnxFlopsError, match="give its inputs"):
            onnxflops.count(nn.Linear(2, 2))

    def test_an_unknown_exporter(self):
        with pytest.raises(onnxflops.OnnxFlopsError, match="unknown exporter 'onnx'"):
            torch_to_onnx(nn.Linear(2, 2), (1, 2), exporter="onnx")

    def test_pickled_torch_files_are_refused(self, tmp_path):
        path = tmp_path / "model.pt"
        torch.save(nn.Linear(2, 2), path)
        with pytest.raises(onnxflops.OnnxFlopsError, match="pickled PyTorch files are not loaded"):
            onnxflops.count(path)

    @pytest.mark.parametrize("spec,message", [
        (MODELS + "torch_models:no_such_model", "has no function 'no_such_model'"),
        ("no_such_package.nets:build", "cannot import module 'no_such_package.nets'"),
        ("models:pair", "the factory raised TypeError")])
    def test_factory_spec_errors(self, spec, message):
        with pytest.raises(onnxflops.OnnxFlopsError, match=message):
            onnxflops.count(spec)


class TestFiles:
    def test_a_keras_file_counts_like_the_model(self, tmp_path):
        model = keras_cnn()
        model.save(tmp_path / "cnn.keras")
        assert totals(onnxflops.count(tmp_path / "cnn.keras")) == KERAS_CNN

    def test_a_lambda_layer_in_a_file_is_refused_unless_trusted(self, tmp_path):
        from onnxflops.sources import to_onnx

        x = keras.Input((4,))
        model = keras.Model(x, keras.layers.Lambda(lambda t: t * 2.0)(x))
        model.save(tmp_path / "lambda.keras")
        with pytest.raises(onnxflops.OnnxFlopsError, match="Lambda layer"):
            onnxflops.count(tmp_path / "lambda.keras")
        assert onnxflops.count(to_onnx(tmp_path / "lambda.keras", unsafe=True).counted).total.flops == 4

    def test_a_saved_model_directory(self, tmp_path):
        x = keras.Input((16,))
        model = keras.Model(x, keras.layers.Dense(8, activation="relu")(x))
        model.export(str(tmp_path / "saved"), format="tf_saved_model", verbose=False)
        report = onnxflops.count(tmp_path / "saved")
        assert (report.total.macs, report.total.flops, report.total.params) == \
            (128, 2 * 128 + 8 + 8, 136)

    def test_an_exported_program_file(self, tmp_path):
        module = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU())
        program = torch.export.export(module, (torch.randn(1, 3, 8, 8),))
        torch.export.save(program, tmp_path / "conv.pt2")
        report = onnxflops.count(tmp_path / "conv.pt2")
        assert report.total.macs == 4 * 36 * 27
        assert report.total.params == 112


class TestCommandLine:
    def test_an_exported_program_file_counts_on_its_example_inputs(self, tmp_path, capsys):
        # Linear(8, 4) on the program's example input 2×8: 2·8·4 = 64 MACs, 8·4 + 4 = 36 params.
        program = torch.export.export(nn.Linear(8, 4), (torch.randn(2, 8),))
        torch.export.save(program, tmp_path / "exported.pt2")
        assert main(["count", str(tmp_path / "exported.pt2"), "--json"]) == 0
        total = json.loads(capsys.readouterr().out)["total"]
        assert (total["macs"], total["params"]) == (64, 36)

    def test_a_factory_returning_an_exported_program_counts_on_its_example_inputs(self, tmp_path):
        (tmp_path / "programs.py").write_text(
            "import torch\n\ndef linear():\n"
            "    return torch.export.export(torch.nn.Linear(8, 4), (torch.randn(2, 8),))\n")
        # This checkout's onnxflops, from another working directory.
        env = {**os.environ, "PYTHONPATH": str(Path(onnxflops.__file__).parents[1])}
        done = subprocess.run([sys.executable, "-m", "onnxflops.cli", "count", "programs:linear",
                               "--json"], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                              env=env)
        assert done.returncode == 0, done.stderr
        total = json.loads(done.stdout)["total"]
        assert (total["macs"], total["params"]) == (64, 36)

    @pytest.mark.parametrize("spec,given,expected", [
        (MODELS + "torch_models:mlp", "inptu=1x64", "forward() has no argument 'inptu' "
                                                    "(did you mean 'input'?)"),
        (MODELS + "keras_models:mlp", "xx=1x64", "has no input 'xx' (did you mean 'x'?)")])
    def test_a_misspelled_input_name_gets_the_closest_one(self, spec, given, expected, capsys):
        assert main(["count", spec, "--input", given]) == 2
        err = capsys.readouterr().err
        assert expected in err and err.count("\n") == 1

    def test_convert_writes_onnx_and_says_when_real_weights_simplified_the_graph(
            self, tmp_path, capsys):
        keras_cnn().save(tmp_path / "cnn.keras")
        assert main(["convert", str(tmp_path / "cnn.keras"), "-o", str(tmp_path / "cnn.onnx")]) == 0
        assert "simplified the graph" in capsys.readouterr().err
        assert main(["convert", str(tmp_path / "cnn.keras"), "-o", str(tmp_path / "s.onnx"),
                     "--stand-in-weights"]) == 0
        assert totals(onnxflops.count(tmp_path / "s.onnx")) == KERAS_CNN

    def test_count_converts_factory_specs_on_the_fly(self, capsys):
        assert main(["count", MODELS + "torch_models:mlp", "--input", "input=1x64", "--json"]) == 0
        assert '"macs": 17024' in capsys.readouterr().out

    def test_a_token_model_from_a_factory_takes_integer_ids(self, capsys):
        from onnxflops.models.torch_models import text_cnn

        ids = torch.ones(1, 40, dtype=torch.int64)
        expected = onnxflops.count(text_cnn(), inputs={"tokens": ids}).total.macs
        assert main(["count", MODELS + "torch_models:text_cnn", "--input", "tokens=1x40:int64",
                     "--json"]) == 0
        assert f'"macs": {expected}' in capsys.readouterr().out
        assert main(["count", MODELS + "torch_models:text_cnn", "--input", "tokens=1x40"]) == 2
        assert main(["count", MODELS + "torch_models:text_cnn", "--input", "tokens=1x40:int4"]) == 2
        assert "unknown dtype 'int4'" in capsys.readouterr().err

    def test_a_factory_in_a_users_own_models_package_is_the_users(self, tmp_path):
        """`models` is the user's name: onnxflops' own builders live under onnxflops.models."""
        (tmp_path / "models").mkdir()
        (tmp_path / "models" / "__init__.py").write_text("")
        # y = x·Wᵀ + b, x [2, 8], W [4, 8]: 2·8·4 = 64 MACs, 8·4 + 4 = 36 params.
        (tmp_path / "models" / "tiny.py").write_text(
            "import torch\n\ndef linear():\n    return torch.nn.Linear(8, 4)\n")
        done = subprocess.run([sys.executable, "-m", "onnxflops.cli", "count", "models.tiny:linear",
                               "--input", "input=2x8", "--json"],
                              cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        total = json.loads(done.stdout)["total"]
        assert (total["macs"], total["params"]) == (64, 36)

    def test_a_clean_keras_count_prints_nothing_on_stderr(self):
        done = subprocess.run([sys.executable, "-m", "onnxflops.cli", "count",
                               MODELS + "keras_models:mlp"], capture_output=True, text=True)
        assert done.returncode == 0
        assert done.stderr == ""  # no TensorFlow logging from C++ on import or first use

    def test_a_shape_that_does_not_fit_a_linear_is_one_line_with_no_framework_log(self):
        # mlp's first Linear takes 64 features: torch's fake tensors log a 38-line traceback.
        done = subprocess.run([sys.executable, "-m", "onnxflops.cli", "count",
                               MODELS + "torch_models:mlp", "--input", "input=1x63"],
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 2
        assert done.stderr.count("\n") == 1 and done.stderr.startswith("onnxflops: error:")
        assert "[1, 63]" in done.stderr and done.stdout == ""

    def test_from_python_a_conversion_error_logs_nothing(self, capfd):
        from onnxflops.models.torch_models import mlp

        with pytest.raises(onnxflops.OnnxFlopsError, match=r"\[1, 63\]") as error:
            onnxflops.count(mlp(), inputs=((1, 63),))
        assert "\n" not in str(error.value)
        assert capfd.readouterr().err == ""

    def test_float_token_ids_say_once_what_torch_said_and_to_add_int64(self, capsys):
        assert main(["count", MODELS + "torch_models:text_cnn", "--input", "tokens=1x40"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1
        # both exporters said it: told once, in the layer that said it, cut to 200 characters
        # with the hint kept whole
        assert err.count("Expected tensor for argument #1 'indices'") == 1
        assert "_TextCNN': in layer 'embedding': " in err
        assert len(err.strip().removeprefix("onnxflops: error: ")) <= 200
        assert err.strip().endswith("--input tokens=1x40:int64")

    def test_a_conversion_error_is_one_line_and_exit_status_2(self, capsys):
        assert main(["count", MODELS + "torch_models:mlp"]) == 2
        err = capsys.readouterr().err
        assert err.startswith("onnxflops: error:") and err.count("\n") == 1


def test_initializers_are_told_by_their_stand_in_values_with_or_without_sampling(monkeypatch):
    """Which weight an initializer holds, found by value: a slice of a table, a transposed
    kernel, a constant of its own; also when large weights keep only a sample of their values."""
    import onnx
    import onnx.numpy_helper as nh

    from onnxflops.converters import weight_match
    from onnxflops.converters.structure import StandInValues
    from onnxflops.converters.weight_match import Weight, weight_roles_by_value

    values = StandInValues()
    table, kernel, stats = (values.like(s, np.float32) for s in ((500, 64), (64, 32), (32,)))
    weights = [Weight("table", table, True), Weight("kernel", kernel, True),
               Weight("stats", stats, False)]
    model = onnx.helper.make_model(onnx.helper.make_graph(
        [], "g", [], [], [nh.from_array(table[3:9], "rows"), nh.from_array(kernel.T.copy(), "k"),
                          nh.from_array(stats, "s"), nh.from_array(np.cos(table[:4]), "cos")]))
    for kept in (10**9, 1000):  # everything kept; the large table sampled
        monkeypatch.setattr(weight_match, "_KEPT", kept)
        roles = weight_roles_by_value(model, weights)
        assert roles["parameters"] == {"rows": "table", "k": "kernel"}
        assert roles["buffers"] == {"s": "stats"} and roles["constants"] == ["cos"]
        assert roles["sizes"] == {"table": 32000, "kernel": 2048, "stats": 32}


def test_real_weights_that_share_values_are_told_apart_by_what_they_are():
    """keep_weights: real values repeat across weights (zero biases, unit scales). An initializer
    that several weights could hold is a param (or buffer) of its own size where they agree,
    and left to the graph's rules where they do not."""
    import onnx
    import onnx.numpy_helper as nh

    from onnxflops.converters.weight_match import Weight, weight_roles_by_value

    rng = np.random.default_rng(0)
    table = rng.standard_normal((50, 8)).astype(np.float32)
    zeros4, zeros6 = np.zeros(4, np.float32), np.zeros(6, np.float32)
    ones = np.ones(3, np.float32)
    weights = [Weight("table", table, True), Weight("bias_a", zeros4, True),
               Weight("bias_b", zeros6, True), Weight("mean", np.zeros(4, np.float32), False),
               Weight("scale_a", ones, True), Weight("scale_b", ones.copy(), True)]
    model = onnx.helper.make_model(onnx.helper.make_graph([], "g", [], [], [
        nh.from_array(table[:16], "rows"), nh.from_array(zeros6, "b6"),
        nh.from_array(zeros4, "zeros4"), nh.from_array(ones, "ones"),
        nh.from_array(np.cos(table), "cos")]))
    roles = weight_roles_by_value(model, weights, distinct=False)
    # Only one weight holds 6 zeros; both that hold 3 ones are params: a param of its own.
    assert roles["parameters"] == {"rows": "table", "b6": "bias_b", "ones": "ones"}
    assert roles["constants"] == ["cos"]
    assert "zeros4" not in roles["buffers"] and not roles["exhaustive"]  # a bias or the mean?


def test_a_keras_model_converted_with_its_own_weights_records_its_params():
    """keep_weights=True: the record is read from the real values. Grappler cuts the position
    table to the 6 rows the graph reads; the table still counts whole, its 64 × 4 elements."""

    class Positions(keras.layers.Layer):
        def build(self, shape):
            self.table = self.add_weight(shape=(64, shape[-1]), initializer="random_normal")

        def call(self, x):
            return x + self.table[: x.shape[1]]

    x = keras.Input((6, 4), name="x")
    y = keras.layers.BatchNormalization(name="bn")(Positions(name="positions")(x))
    model = keras.Model(x, keras.layers.Dense(3, name="dense")(y))
    randomize_keras(model)
    from onnxflops.load import weight_roles

    converted = keras_to_onnx(model, keep_weights=True)
    assert weight_roles(converted) is not None
    report = onnxflops.count(converted)
    assert report.total.params == sum(int(np.prod(w.shape)) for w in model.trainable_weights)
    assert report.total.params == 64 * 4 + 2 * 4 + 4 * 3 + 3
    assert report.total.buffers == 2 * 4


@pytest.mark.parametrize("keep_weights", [False, True])
def test_a_normalization_given_its_statistics_holds_constants_not_inputs(keep_weights):
    """Mean and variance given to the constructor are tensors the model captures: constants of
    the graph (not inputs a user would have to feed), and no params, as count_params says."""
    def normalized(layer):
        x = keras.Input((4, 4, 3), name="x")
        model = keras.Model(x, keras.layers.Conv2D(2, 1, name="conv")(layer(x)))
        randomize_keras(model)  # a bias of its own: Grappler would drop a zero one
        return model

    given = normalized(keras.layers.Normalization(mean=[0.1, 0.2, 0.3],
                                                  variance=[1.0, 2.0, 3.0]))
    converted = keras_to_onnx(given, keep_weights=keep_weights)
    assert [i.name for i in converted.graph.input] == ["x"]
    report = onnxflops.count(converted)
    assert report.total.params == given.count_params() == 2 * 3 + 2
    # (x − mean) · 1/√var per element, then the 1×1 conv with its bias
    assert report.total.flops == 2 * 48 + 2 * 16 * 2 * 3 + 16 * 2


class _UnusedParts(nn.Module):
    """A Linear(4→3) the forward runs; a mask token (1×5) and a head Linear(3→2) it never reads,
    as pre-training tokens and training-only heads are."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)
        self.mask_token = nn.Parameter(torch.zeros(1, 5))
        self.aux = nn.Linear(3, 2)

    def forward(self, x):
        return self.fc(x)


@pytest.mark.parametrize("exporter", ["dynamo", "legacy"])
@pytest.mark.parametrize("by_name", [False, True])
def test_parameters_the_forward_never_reads_are_unused_params(exporter, by_name):
    module = _UnusedParts()
    inputs = {"x": (2, 4)} if by_name else [(2, 4)]
    report = onnxflops.count(torch_to_onnx(module, inputs, exporter=exporter))
    assert report.total.params == 4 * 3 + 3  # fc: weight 12 + bias 3
    assert report.total.unused_params == 1 * 5 + (3 * 2 + 2)  # mask token 5; aux 6 + 2
    assert report.unused == {"mask_token": 5, "aux.weight": 6, "aux.bias": 2}
    assert report.total.params + report.total.unused_params == sum(
        p.numel() for p in module.parameters())


class _ListOfImages(nn.Module):
    """A detector's calling convention: a list of images (C×H×W), each through one 1×1 conv, and
    a dict of a feature map and an offset."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 1, bias=False)

    def forward(self, images, extra):
        total = sum(self.conv(image.unsqueeze(0)).sum() for image in images)
        return total + (extra["features"] * extra["scale"]).sum()


@pytest.mark.parametrize("exporter", ["dynamo", "legacy"])
def test_a_forward_taking_a_list_and_a_dict_of_tensors_converts(exporter):
    images = [torch.rand(3, 8, 8), (3, 4, 6)]  # a tensor, and a shape made into one
    extra = {"features": (2, 5), "scale": torch.ones(2, 5)}
    report = onnxflops.count(_ListOfImages(), [images, extra], exporter=exporter)
    assert not report.uncosted
    # 1×1 conv, 3 in → 4 out: 4·8·8·3 = 768 MACs for the first image, 4·4·6·3 = 288 the second
    assert report.total.macs == 768 + 288
    assert report.total.params == 4 * 3


def test_an_input_that_is_no_tensor_is_named_without_printing_any_tensor():
    with pytest.raises(onnxflops.OnnxFlopsError) as e:
        torch_to_onnx(_ListOfImages(), [[torch.rand(3, 64, 64), "oops"], {}])
    message = str(e.value)
    assert "input 'images'[1] is the text 'oops'" in message
    assert "tensor(" not in message and len(message) < 300
