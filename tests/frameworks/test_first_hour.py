"""What a new user met in a first hour with a torch model: names, messages, layer paths."""

from __future__ import annotations

import pytest

import onnxflops

torch = pytest.importorskip("torch")
nn = torch.nn


class TinyNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.head = nn.Linear(8 * 6 * 6, 4)

    def forward(self, x):
        return self.head(torch.relu(self.conv(x)).flatten(1))


def test_a_profiled_module_is_named_by_its_class_not_its_printout():
    module = TinyNet()
    assert "\n" in str(module)  # what naming it by its text would show
    profiled = onnxflops.profile(module, inputs={"x": (1, 3, 8, 8)}, runs=2, warmup=0,
                                 profile_runs=1, threads=1, ceilings=False)
    assert profiled.model == profiled.count.model == "TinyNet"
    text = profiled.to_text()
    assert text.startswith("TinyNet runs in ")  # the summary's sentence names it
    assert any(line.startswith("TinyNet  provider=cpu") for line in text.splitlines())
    assert str(module) not in text
    assert onnxflops.count(module, inputs={"x": (1, 3, 8, 8)}).model == "TinyNet"
    assert onnxflops.compare(module, module, inputs={"x": (1, 3, 8, 8)}).a.model == "TinyNet"


class Pair(nn.Module):
    def forward(self, x, mask):
        return x * mask


def test_a_missing_forward_argument_gets_the_hint_to_give_it_in_the_callers_words(
        tmp_path, monkeypatch, capsys):
    from onnxflops.cli import main

    with pytest.raises(onnxflops.OnnxFlopsError) as raised:
        onnxflops.count(Pair(), inputs={"x": (2, 4)})
    assert "forward() needs 'mask', not given: give it, e.g. inputs={'mask': shape}" \
        in str(raised.value)
    (tmp_path / "pair_factory.py").write_text(
        "import torch\n\n\nclass Pair(torch.nn.Module):\n    def forward(self, x, mask):\n"
        "        return x * mask\n\n\ndef build():\n    return Pair()\n")
    monkeypatch.chdir(tmp_path)
    assert main(["count", "pair_factory:build", "--input", "x=2x4"]) == 2
    error = capsys.readouterr().err.strip()
    assert "forward() needs 'mask', not given: give it, e.g. --input mask=DIMS" in error
    assert "inputs=" not in error


def test_a_misspelled_argument_of_a_library_model_gets_did_you_mean():
    """A transformers model's forward() takes **kwargs: `input_id` went through to it, and the
    export failed for want of input_ids ("neither exporter can convert it")."""
    transformers = pytest.importorskip("transformers")
    config = transformers.BertConfig(vocab_size=64, hidden_size=16, num_hidden_layers=1,
                                     num_attention_heads=2, intermediate_size=32)
    with pytest.raises(onnxflops.OnnxFlopsError) as raised:
        onnxflops.count(transformers.BertModel(config), inputs={"input_id": (1, 8)})
    message = str(raised.value)
    assert "forward() has no argument 'input_id' (did you mean 'input_ids'?)" in message
    assert "exporter" not in message


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x).reshape(3, 7)  # 16 elements: no 3×7 view


class Untranslatable(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return torch.linalg.eig(self.fc(x))[0].real


def _failure(module, shape=(4, 4)) -> str:
    with pytest.raises(onnxflops.OnnxFlopsError) as raised:
        onnxflops.count(module, inputs=(shape,))
    return str(raised.value)


def test_a_failed_conversion_is_one_short_line_naming_the_root_cause():
    import inspect

    message = _failure(nn.Sequential(Block()))
    line = inspect.getsourcelines(Block.forward)[1] + 1
    assert message == (f"PyTorch model 'Sequential': at test_first_hour.py:{line} in layer '0': "
                       "shape '[3, 7]' is invalid for input of size 16")
    # a torch layer's own forward raised it: that layer, and the model's line that called it
    line = inspect.getsourcelines(TinyNet.forward)[1] + 1
    # (9×9 leaves 7×7×8 = 392 features for a Linear of 288)
    assert _failure(TinyNet(), (1, 3, 9, 9)).startswith(
        f"PyTorch model 'TinyNet': at test_first_hour.py:{line} in layer 'head': ")
    # each exporter names the op; said once, not as three exporters' messages joined
    assert _failure(Untranslatable()) == \
        "PyTorch model 'Untranslatable': no ONNX translation of aten.linalg_eig"


def test_a_failed_conversions_line_is_cut_to_200_characters_and_debug_prints_the_rest(
        tmp_path, monkeypatch, capsys):
    from onnxflops.cli import main

    (tmp_path / "failing_factory.py").write_text(
        "import torch\n\n\nclass Failing(torch.nn.Module):\n    def forward(self, x):\n"
        "        raise ValueError('a reason ' * 40)\n\n\ndef build():\n    return Failing()\n")
    monkeypatch.chdir(tmp_path)
    assert main(["count", "failing_factory:build", "--input", "x=2x4"]) == 2
    error = capsys.readouterr().err
    assert len(error.splitlines()) == 1
    line = error.removeprefix("onnxflops: error: ").rstrip("\n")
    assert len(line) == 200 and line.endswith("…")
    assert line.startswith("PyTorch model 'Failing': at failing_factory.py:6: a reason")
    assert main(["count", "failing_factory:build", "--input", "x=2x4", "--debug"]) == 2
    debugged = capsys.readouterr().err
    assert "the dynamo exporter:\nTraceback (most recent call last):" in debugged
    assert "the legacy exporter:\nTraceback" in debugged
    assert debugged.splitlines()[-1] == error.rstrip("\n")
