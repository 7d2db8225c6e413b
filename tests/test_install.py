"""The wheel as users get it: built from this tree, installed into clean virtual environments
(no system site packages) with the core dependencies only, on every Python the project claims;
and the framework extras, asked of pip without installing, leave a user's torch and TensorFlow
in place.

The wheel and venv tests are slow (pip reaching the package index): they run with the rest of the
suite, or alone with `python -m pytest tests/test_install.py`.
"""

from __future__ import annotations

import email
import glob
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

import onnxflops

ROOT = Path(__file__).resolve().parent.parent
# Every version pyproject's requires-python and classifiers claim; the first runs at the floors of
# the core dependencies (constraints/lowest.txt), the others at the newest releases.
PYTHONS = ("3.10", "3.11", "3.12", "3.13")
FLOORS = ROOT / "constraints" / "lowest.txt"
PIP_TIMEOUT = 900
# Frameworks: counting an .onnx file must not need one, so none may come with the core install.
FRAMEWORKS = {"torch", "tensorflow", "tensorflow-cpu", "keras", "onnxruntime", "tf2onnx",
              "onnxscript", "transformers"}


def clean_env() -> dict[str, str]:
    """The environment without this checkout on the path: the venv sees only what it installed."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}


def sh(*argv, cwd=None, env=None, timeout=PIP_TIMEOUT) -> subprocess.CompletedProcess:
    done = subprocess.run([str(a) for a in argv], cwd=cwd, env=env or clean_env(),
                          capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{argv}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def interpreter(version: str) -> str | None:
    """A python of that version: pyenv's, then one named python3.X on the PATH that runs."""
    pyenv_root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    found = sorted(glob.glob(os.path.join(pyenv_root, "versions", f"{version}.*", "bin", "python")))
    candidates = [*found, shutil.which(f"python{version}")]
    for candidate in filter(None, candidates):
        probe = subprocess.run(
            [candidate, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True, text=True)
        if probe.returncode == 0 and probe.stdout.strip() == version:
            return candidate
    return None


def venv(python: str, path: Path) -> Path:
    sh(python, "-m", "venv", path)
    return path / "bin" / "python"


def dist_name(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel of this tree, built from a copy: the build leaves nothing in the checkout."""
    source = tmp_path_factory.mktemp("source") / "onnxflops"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".git", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache", "tests", "bench"))
    out = tmp_path_factory.mktemp("wheel")
    # With setuptools here, pip builds with it rather than fetching it into an isolated env.
    isolation = [] if importlib.util.find_spec("setuptools") is None else ["--no-build-isolation"]
    sh(sys.executable, "-m", "pip", "wheel", "--no-deps", *isolation, "-q", "-w", out, source)
    (built,) = out.glob("onnxflops-*.whl")
    return built


def top_level_packages(wheel_path: Path) -> set[str]:
    with zipfile.ZipFile(wheel_path) as archive:
        return {name.split("/")[0] for name in archive.namelist()
                if not name.split("/")[0].endswith((".dist-info", ".data"))}


def wheel_metadata(wheel_path: Path) -> email.message.Message:
    with zipfile.ZipFile(wheel_path) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        return email.message_from_bytes(archive.read(name))


@pytest.mark.slow
def test_wheel_declares_ranges_never_pins(wheel):
    metadata = wheel_metadata(wheel)
    requires = metadata.get_all("Requires-Dist")
    core = {dist_name(r.split(">")[0].split("=")[0].split("<")[0].strip())
            for r in requires if "extra ==" not in r}
    assert core == {"onnx", "numpy", "sympy"}
    assert not [r for r in requires if "==" in r.split(";")[0] or "~=" in r.split(";")[0]]
    assert not [r for r in requires if r.startswith("tensorflow-cpu")]
    assert metadata["Requires-Python"] == ">=3.10"
    assert metadata["Version"] == onnxflops.__version__
    assert {"keras", "torch", "runtime", "hf", "convert", "test", "all"} <= set(
        metadata.get_all("Provides-Extra"))


@pytest.mark.slow
def test_wheel_installs_only_the_onnxflops_package(wheel):
    assert top_level_packages(wheel) == {"onnxflops"}


def user_project(root: Path) -> Path:
    """A project of a user: its own `models` and `converters` packages, and a small model.

    Importing either of its packages would fail loudly: counting an .onnx file must not touch them.
    """
    for package in ("models", "converters"):
        (root / package).mkdir(parents=True)
        (root / package / "__init__.py").write_text(
            f"raise ImportError('the user project\\'s own {package} was imported')\n")
    # y = relu(x·W + b), x [2, 8], W [8, 4]: 2·8·4 = 64 MACs, 8·4 + 4 = 36 params.
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["xW"]),
         helper.make_node("Add", ["xW", "b"], ["z"]), helper.make_node("Relu", ["z"], ["y"])],
        "user",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor("W", TensorProto.FLOAT, [8, 4], [0.5] * 32),
         helper.make_tensor("b", TensorProto.FLOAT, [4], [0.0] * 4)])
    # IR 8, as an exporter of opset 17 writes it: the floor's onnx reads it (this onnx's default IR
    # may be newer than the floor's onnx reads, which is refused there).
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8),
              root / "model.onnx")
    return root


def installed(python: Path) -> set[str]:
    listing = sh(python, "-m", "pip", "list", "--format", "json").stdout
    return {dist_name(d["name"]) for d in json.loads(listing)}


@pytest.fixture(scope="module")
def environments(wheel, tmp_path_factory) -> dict[str, Path | Exception | None]:
    """For each Python in PYTHONS found here, a clean venv holding the wheel with its core
    dependencies, pytest and hypothesis (None where that Python is missing). Built side by side:
    each is mostly waiting on the package index."""
    root = tmp_path_factory.mktemp("venvs")

    def build(version: str) -> Path | None:
        python = interpreter(version)
        if python is None:
            return None
        env_python = venv(python, root / version)
        floors = ["-c", FLOORS] if version == PYTHONS[0] else []
        sh(env_python, "-m", "pip", "install", "-q", wheel, "pytest>=7", "hypothesis>=6", *floors)
        return env_python

    def attempt(version: str) -> Path | Exception | None:
        try:
            return build(version)
        except Exception as error:  # noqa: BLE001  (reported by that version's tests)
            return error

    with ThreadPoolExecutor(len(PYTHONS)) as pool:
        return dict(zip(PYTHONS, pool.map(attempt, PYTHONS)))


def environment(environments, version: str) -> Path:
    built = environments[version]
    if built is None:
        pytest.skip(f"no Python {version} on this machine")
    if isinstance(built, Exception):
        raise built
    return built


@pytest.mark.slow
@pytest.mark.parametrize("version", PYTHONS)
def test_wheel_installs_and_counts_from_a_users_project(version, environments, tmp_path):
    env_python = environment(environments, version)
    assert not installed(env_python) & FRAMEWORKS

    project = user_project(tmp_path / "project")
    env = {**clean_env(), "PYTHONPATH": str(project)}  # the user's packages first on the path
    onnxflops_command = env_python.parent / "onnxflops"
    done = sh(onnxflops_command, "count", "model.onnx", "--json", cwd=project, env=env)
    total = json.loads(done.stdout)["total"]
    assert total["macs"] == 2 * 8 * 4
    assert total["params"] == 8 * 4 + 4
    assert sh(onnxflops_command, "--version", cwd=project, env=env).stdout == \
        f"onnxflops {onnxflops.__version__}\n"
    # Still the user's own packages under their names.
    probe = sh(env_python, "-c", "import importlib.util as u; "
               "print(u.find_spec('models').origin, u.find_spec('converters').origin)",
               cwd=project, env=env).stdout.split()
    assert probe == [str(project / "models" / "__init__.py"),
                     str(project / "converters" / "__init__.py")]


# The fast tests run whole at the two ends of the claimed range: the oldest Python at the core
# dependencies' floors, the newest at their newest releases. The versions between them install
# and count (test_wheel_installs_and_counts_from_a_users_project), and 3.11 runs the whole suite;
# four fast layers more were a fifth of the suite's CPU time on CI's two cores.
CORE_TEST_PYTHONS = (PYTHONS[0], PYTHONS[-1])


@pytest.fixture(scope="module")
def core_test_runs(environments) -> dict[str, subprocess.CompletedProcess | Exception | None]:
    """The fast tests run in the venvs of CORE_TEST_PYTHONS, side by side (each a
    single-threaded pytest)."""
    def run(version: str) -> subprocess.CompletedProcess | Exception | None:
        built = environments[version]
        if built is None or isinstance(built, Exception):
            return built
        try:  # from the checkout: the working directory comes first on the path, before the wheel
            return sh(built, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "-m",
                      "not slow", "-o", "addopts=", cwd=ROOT)  # no durations: the failure ends it
        except Exception as error:  # noqa: BLE001  (reported by that version's test)
            return error

    with ThreadPoolExecutor(len(CORE_TEST_PYTHONS)) as pool:
        return dict(zip(CORE_TEST_PYTHONS, pool.map(run, CORE_TEST_PYTHONS)))


@pytest.mark.slow
@pytest.mark.parametrize("version", CORE_TEST_PYTHONS)
def test_core_tests_run_on_the_oldest_and_newest_python(version, environments, core_test_runs):
    """The tests that need no framework (the frameworks' own skip where none is installed) pass
    on the oldest claimed Python at the core dependencies' floors and on the newest."""
    environment(environments, version)
    done = core_test_runs[version]
    if isinstance(done, Exception):
        raise done


def fake_installed(site_packages: Path, name: str, version: str) -> None:
    """What pip reads of an installed distribution: its .dist-info with METADATA and RECORD."""
    info = site_packages / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "INSTALLER").write_text("pip\n")
    (info / "RECORD").write_text("")


@pytest.mark.slow
def test_framework_extras_keep_the_users_torch_and_tensorflow(wheel, tmp_path):
    """In an environment holding CUDA torch 2.14.1 and TensorFlow, pip (--dry-run) would install
    the converters' other dependencies and replace neither."""
    env_python = venv(sys.executable, tmp_path / "venv")
    (site_packages,) = (tmp_path / "venv" / "lib").glob("python3.*/site-packages")
    users = {"torch": "2.14.1", "tensorflow": "2.21.0"}
    for name, version in users.items():
        fake_installed(site_packages, name, version)
    report = tmp_path / "report.json"
    sh(env_python, "-m", "pip", "install", "-q", "--dry-run", "--report", report,
       f"{wheel}[keras,torch,runtime,hf]")
    would_install = {dist_name(item["metadata"]["name"]): item["metadata"]["version"]
                     for item in json.loads(report.read_text())["install"]}
    assert "onnxflops" in would_install
    assert {"tf2onnx", "keras", "onnxscript", "onnxruntime", "transformers"} <= set(would_install)
    assert not set(would_install) & {*users, "tensorflow-cpu"}, would_install


def test_ci_runs_exactly_the_readmes_test_command():
    readme = (ROOT / "README.md").read_text()
    test_command = next(line for line in readme.splitlines()
                        if line.startswith("python -m pip install") and "pytest" in line)
    ci_lines = [line for line in (ROOT / ".ci" / "run").read_text().splitlines()
                if line.startswith("python -m pip install")]
    assert [line.replace(" -q", "") for line in ci_lines] == [test_command]
    # The CPU builds are chosen there, by pins in the constraints file, never by the metadata.
    constraints = ROOT / test_command.split(" -c ")[1].split()[0]
    pins = [line for line in constraints.read_text().splitlines() if line and line[0] != "#"]
    assert pins and all("==" in line for line in pins)
