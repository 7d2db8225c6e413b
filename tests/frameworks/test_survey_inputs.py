"""The inputs the survey gives a transformers model, by what its config says it takes."""

import types

import pytest

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.slow


def test_spectrogram_values_are_frames_by_bins_and_a_waveform_is_samples():
    from onnxflops.survey.sources import _transformers_inputs

    class Audio(torch.nn.Module):
        main_input_name = "input_values"

        def forward(self, input_values):
            return input_values

    spectrogram = types.SimpleNamespace(num_mel_bins=8, max_length=12)
    assert _transformers_inputs(Audio(), spectrogram)["input_values"].shape == (1, 12, 8)
    waveform = types.SimpleNamespace()
    assert _transformers_inputs(Audio(), waveform)["input_values"].shape == (1, 16000)


def test_a_registry_model_is_built_with_the_same_weights_in_every_run():
    # a row whose work depends on the weights (a router's experts) reruns alike
    from onnxflops.survey.registries import SOURCES
    from onnxflops.survey.sources import Task

    task = Task("transformers", "", "bert")
    first = SOURCES["transformers"].build(task).model
    torch.rand(3)  # whatever draws between the builds
    again = SOURCES["transformers"].build(task).model
    assert all(torch.equal(a, b) for a, b in zip(first.parameters(), again.parameters()))
