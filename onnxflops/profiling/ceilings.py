"""The machine's practical ceilings: peak FLOP/s and memory bandwidth, measured once and cached.

Peak FLOP/s is the best onnxruntime reaches, with the same provider, threads and dtype as the
model, over several compute-bound probes: a square MatMul, a MatMul with a long inner dim and a
3×3 convolution (which onnxruntime's CPU provider runs in its blocked NCHWc layout, faster than
its MatMul: one probe alone let ResNet-50 reach 100.1% of the "peak"); bandwidth is what it reaches copying a large tensor (bytes read plus bytes
written per second). Both are the best of a few runs. They are cached per machine, provider,
threads and dtype in $ONNXFLOPS_CACHE_DIR, else $XDG_CACHE_HOME/onnxflops, else
~/.cache/onnxflops. `quick` measures small problems (for tests): a rough figure, cached apart.
"""

from __future__ import annotations

import json
import os
import platform
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

from onnxflops.profiling.runtime import SessionConfig, import_ort, make_session

# Side of the MatMul and elements copied, per provider: full measurement, quick one.
_MATMUL_SIDE = {"cpu": (2048, 256), "cuda": (8192, 1024)}
# The convolution probe: channels in = out and spatial side, per provider (full, quick).
_CONV = {"cpu": ((256, 56), (64, 28)), "cuda": ((512, 64), (128, 32))}
_COPY_ELEMENTS = {"cpu": (64 << 20, 1 << 20), "cuda": (256 << 20, 4 << 20)}
# Fewest runs and seconds spent per measurement (full, quick): the best run is kept, so more runs
# mean less chance that other work on the machine lowers the figure.
_RUNS = ((10, 1.0), (3, 0.0))
# Part of the cache key: ceilings measured by other probes are measured again.
_PROBES = "probes=matmul,deep-matmul,conv3x3"


@dataclass
class Ceilings:
    peak_flops_per_s: float
    bandwidth_bytes_per_s: float
    dtype: str
    quick: bool
    measured_at: str

    @property
    def ridge(self) -> float:
        """Arithmetic intensity (FLOPs per byte) above which a kernel is compute-bound."""
        return self.peak_flops_per_s / self.bandwidth_bytes_per_s

    def attainable(self, flops: float, bytes_moved: float) -> float:
        """The roofline: the FLOP/s a kernel of this arithmetic intensity can reach at best."""
        if bytes_moved <= 0:
            return self.peak_flops_per_s
        return min(self.peak_flops_per_s, flops / bytes_moved * self.bandwidth_bytes_per_s)

    def bound(self, flops: float, bytes_moved: float) -> str:
        if bytes_moved <= 0:
            return "compute" if flops > 0 else "-"
        return "compute" if flops / bytes_moved >= self.ridge else "memory"


def cache_dir() -> Path:
    if os.environ.get("ONNXFLOPS_CACHE_DIR"):
        return Path(os.environ["ONNXFLOPS_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "onnxflops"


def machine_ceilings(config: SessionConfig, dtype: str = "float32", quick: bool = False,
                     refresh: bool = False) -> Ceilings:
    """The cached ceilings of this machine for `config` and `dtype`, measured when missing."""
    path = cache_dir() / "ceilings.json"
    key = "|".join([_machine(), config.provider, f"device={config.device_id}",
                    f"threads={config.threads or 'default'}", dtype,
                    "quick" if quick else "full", _PROBES])
    cache = _read(path)
    if not refresh and key in cache:
        return Ceilings(**cache[key])
    ceilings = measure(config, dtype, quick)
    cache[key] = asdict(ceilings)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(f".{os.getpid()}.tmp")
    temporary.write_text(json.dumps(cache, indent=1, sort_keys=True))
    temporary.replace(path)
    return ceilings


def measure(config: SessionConfig, dtype: str = "float32", quick: bool = False) -> Ceilings:
    level = 1 if quick else 0
    elements = _COPY_ELEMENTS[config.provider][level]
    runs, seconds = _RUNS[level]
    peak = max(flops / _best_time(model, config, shapes, dtype, runs, seconds)
               for model, shapes, flops in _compute_probes(config.provider, level, dtype))
    copy = _single_op_model("Identity", dtype, [[elements]], [elements])
    best_copy = _best_time(copy, config, [[elements], [elements]], dtype, runs, seconds)
    itemsize = np.dtype(dtype).itemsize
    return Ceilings(peak, 2 * elements * itemsize / best_copy, dtype, quick,
                    time.strftime("%Y-%m-%dT%H:%M:%S"))


def _compute_probes(provider: str, level: int, dtype: str) -> list[tuple[bytes, list, int]]:
    """(model, input shapes then output shape, FLOPs) of each compute-bound probe."""
    n = _MATMUL_SIDE[provider][level]
    c, side = _CONV[provider][level]
    probes = [("MatMul", [[n, n], [n, n], [n, n]], 2 * n ** 3, {}),
              ("MatMul", [[n // 2, 4 * n], [4 * n, n // 2], [n // 2, n // 2]], n ** 3, {}),
              ("Conv", [[1, c, side, side], [c, c, 3, 3], [1, c, side, side]],
               2 * c * c * 9 * side * side, {"pads": [1, 1, 1, 1]})]
    return [(_single_op_model(op, dtype, shapes[:-1], shapes[-1], **attrs), shapes, flops)
            for op, shapes, flops, attrs in probes]


def _single_op_model(op_type: str, dtype: str, input_shapes: list[list[int]],
                     output_shape: list[int], **attrs) -> bytes:
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    names = [f"x{i}" for i in range(len(input_shapes))]
    graph = helper.make_graph([helper.make_node(op_type, names, ["y"], **attrs)], op_type.lower(),
                              [helper.make_tensor_value_info(n, elem, shape)
                               for n, shape in zip(names, input_shapes)],
                              [helper.make_tensor_value_info("y", elem, output_shape)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8  # any onnxruntime of the last years runs IR 8
    return model.SerializeToString()


def _best_time(model: bytes, config: SessionConfig, shapes: list[list[int]], dtype: str,
               runs: int, seconds: float) -> float:
    """Seconds of the fastest of at least `runs` runs taking at least `seconds` in all, inputs
    (`shapes` but the last) and output (the last) bound in place (no allocation timed)."""
    ort = import_ort()
    session = make_session(model, SessionConfig(config.provider, config.threads, "all",
                                                config.device_id))
    device = "cuda" if config.provider == "cuda" else "cpu"
    rng = np.random.default_rng(0)
    binding = session.io_binding()
    for i, shape in enumerate(shapes[:-1]):
        x = rng.standard_normal(shape).astype(dtype)
        binding.bind_ortvalue_input(f"x{i}", ort.OrtValue.ortvalue_from_numpy(x, device,
                                                                              config.device_id))
    out = ort.OrtValue.ortvalue_from_shape_and_type(shapes[-1], np.dtype(dtype), device,
                                                    config.device_id)
    binding.bind_ortvalue_output("y", out)
    session.run_with_iobinding(binding)  # warm-up
    times: list[float] = []
    while len(times) < runs or sum(times) < seconds:
        start = time.perf_counter()
        session.run_with_iobinding(binding)
        binding.synchronize_outputs()
        times.append(time.perf_counter() - start)
    return min(times)


def _machine() -> str:
    cpu = platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{platform.node()}/{cpu or platform.machine()}/{os.cpu_count()} cpus"


def _read(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def dominant_float_dtype(model: onnx.ModelProto) -> str:
    """The float dtype most of the model's weights are stored in (float32 when none)."""
    sizes: dict[int, int] = {}
    for t in model.graph.initializer:
        n = int(np.prod(t.dims)) if t.dims else 1
        sizes[t.data_type] = sizes.get(t.data_type, 0) + n
    floats = {TensorProto.FLOAT: "float32", TensorProto.FLOAT16: "float16",
              TensorProto.DOUBLE: "float64"}
    found = [(n, floats[t]) for t, n in sizes.items() if t in floats]
    return max(found)[1] if found else "float32"
