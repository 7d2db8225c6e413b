"""The layers hold: import-linter's contracts in pyproject.toml pass, and they name every stage."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

# The test extra installs it; the core-only environments of test_install.py do not.
pytest.importorskip("importlinter")

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: import-linter brings tomli
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]


def contracts() -> dict[str, dict]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    return {contract["id"]: contract for contract in config["contracts"]}


def test_import_contracts_are_kept():
    # The checkout under test is analysed, not whatever copy of the package is installed.
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.run(
        [sys.executable, "-c", "import sys; from importlinter.cli import lint_imports;"
         "sys.exit(lint_imports(no_cache=True, no_logo=True))"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"{len(contracts())} kept, 0 broken" in run.stdout


def test_every_stage_and_top_module_has_a_layer():
    layered = {name.strip() for layer in contracts()["layers"]["layers"] for name in layer.split("|")}
    package = ROOT / "onnxflops"
    modules = {f"onnxflops.{p.stem}" for p in package.glob("*.py") if p.stem != "__init__"}
    stages = {f"onnxflops.{p.name}" for p in package.iterdir() if (p / "__init__.py").exists()}
    assert modules | stages == layered


def test_converters_may_not_import_the_counting_stages():
    forbidden = contracts()["converters-no-costs"]
    assert forbidden["source_modules"] == ["onnxflops.converters"]
    assert set(forbidden["forbidden_modules"]) >= {
        "onnxflops.costs", "onnxflops.counting", "onnxflops.canonical", "onnxflops.analysis"}


def test_only_the_source_seam_imports_the_converters():
    seam = contracts()["one-source-seam"]
    assert seam["forbidden_modules"] == ["onnxflops.converters"]
    assert set(seam["source_modules"]) >= {
        "onnxflops.api", "onnxflops.cli", "onnxflops.commands", "onnxflops.comparison",
        "onnxflops.html", "onnxflops.profiling", "onnxflops.serving"}


def test_counting_an_onnx_file_imports_no_framework():
    # Every stage an .onnx file passes through when counted; none may import a framework (a lazy
    # import inside a function breaks the contract too).
    stages = contracts()["counting-no-framework"]
    assert set(stages["forbidden_modules"]) >= {"torch", "tensorflow", "keras", "tf2onnx",
                                                "onnxruntime"}
    assert set(stages["source_modules"]) >= {
        "onnxflops.load", "onnxflops.bind", "onnxflops.normalize", "onnxflops.analysis",
        "onnxflops.canonical", "onnxflops.costs", "onnxflops.counting", "onnxflops.results"}


def test_the_survey_table_imports_its_keras_sources_where_the_contracts_see_it():
    # The table names the Keras sources by an import the acyclic contract checks, not a lookup by
    # name that hid a circle (survey.keras builds on survey.sources); nothing leads back.
    grimp = pytest.importorskip("grimp")
    graph = grimp.build_graph("onnxflops")
    assert "onnxflops.survey.keras" in graph.find_modules_directly_imported_by(
        "onnxflops.survey.registries")
    assert "onnxflops.survey.sources" in graph.find_modules_directly_imported_by(
        "onnxflops.survey.keras")
    assert graph.find_shortest_chain(importer="onnxflops.survey.sources",
                                     imported="onnxflops.survey.keras") is None
    assert graph.find_shortest_chain(importer="onnxflops.survey.keras",
                                     imported="onnxflops.survey.registries") is None
