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
