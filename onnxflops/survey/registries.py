"""The table of every source a survey can run over, and the SOURCE[:PATTERN] specs that pick rows
from it. Adding a registry is one entry in `SOURCES`.

It sits above the sources it names: the torch registries, factories and .onnx folders
(`survey.sources`) and the Keras ones (`survey.keras`, which builds on `survey.sources`: its
rows' `Subject` and `Task`, a twin's transformers inputs).
"""

from __future__ import annotations

import fnmatch
from pathlib import Path

from onnxflops.errors import OnnxFlopsError
from onnxflops.survey import keras
from onnxflops.survey.sources import (
    TORCH_REGISTRIES,
    Source,
    Task,
    _factory_build,
    _onnx_build,
    _onnx_names,
    _timm_build,
    _timm_names,
    _torchvision_build,
    _torchvision_names,
    _transformers_build,
    _transformers_names,
    causal_lm_names,
)

REGISTRIES = (*TORCH_REGISTRIES, "keras.applications", "keras_hub")
SOURCES: dict[str, Source] = {
    "torchvision": Source(_torchvision_names, _torchvision_build),
    "timm": Source(_timm_names, _timm_build),
    "transformers": Source(_transformers_names, _transformers_build),
    "factory": Source(lambda spec: [spec], _factory_build),
    "onnx": Source(_onnx_names, _onnx_build),
    "keras.applications": Source(keras.application_names, keras.application_build),
    "keras_hub": Source(keras.hub_names, keras.hub_build),
}


def tasks(specs: list[str], shapes: dict | None = None, llm: bool = False) -> list[Task]:
    """The rows SOURCE[:PATTERN] specs ask for, in order, each once; `shapes` (input name →
    dims) for the models of sources that do not know their inputs (factories); `llm`: serving
    rows of transformers' causal-LM types (the only source it takes)."""
    given = tuple((k, tuple(v)) for k, v in (shapes or {}).items())
    found: dict[str, Task] = {}
    for spec in specs:
        source, argument, pattern = parse(spec)
        if llm and source != "transformers":
            raise OnnxFlopsError(f"survey --llm: '{spec}' is not transformers[:PATTERN]; the "
                                 "serving survey runs over transformers' causal LMs")
        names = causal_lm_names() if llm else SOURCES[source].names(argument)
        for name in names:
            if pattern is None or fnmatch.fnmatchcase(name, pattern):
                task = Task(source, argument, name, given, llm)
                found.setdefault(task.label, task)
    return list(found.values())


def parse(spec: str) -> tuple[str, str, str | None]:
    """(source, argument, pattern) of a SOURCE[:PATTERN] spec."""
    head, _, pattern = spec.partition(":")
    if head in REGISTRIES:
        return head, "", pattern or None
    if Path(spec).is_dir():
        return "onnx", spec, None
    if Path(head).is_dir():
        return "onnx", head, pattern or None
    from onnxflops.sources import needs_conversion  # imports no framework by itself

    if needs_conversion(spec) and not Path(spec).exists():
        return "factory", spec, None
    raise OnnxFlopsError(f"survey source '{spec}': name a registry ({', '.join(REGISTRIES)}), a "
                         "folder of .onnx files, or a package.module:factory spec")
