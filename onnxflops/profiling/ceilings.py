"""The machine's practical ceilings: peak FLOP/s and memory bandwidth, measured once and cached.

Peak FLOP/s is the best onnxruntime reaches, with the same provider, threads and dtype as the
model, over the kernels it runs fastest, each fed as a model feeds it: weights stored in the model
(initializers), so that onnxruntime prepacks them and runs its convolutions in its blocked NCHWc
layout (fed as inputs, a 3×3 convolution took another path, 122 against 155 GFLOP/s on one core,
and 19 of ResNet-50's convolutions ran up to 14% above such a "peak"). The probes: 3×3
convolutions of 64, 128 and 256 channels, a 1×1 one of 1024 to 256 and three MatMuls, each a
millisecond or three a run: the best of many short runs is the rate of a moment when no other
work held the cores, as a model's layers reach it. Bandwidth is the best of
read-dominated kernels streaming a weight as a model's layers do (a vector times a 16 MB and a
64 MB matrix, a sum over 64 MB) and a copy: a copy alone (27 GB/s) let a Llama decode step run
at 1.8× its roofline. Each is the best of a few runs.

Other work on the machine only lowers a probe, so a ceiling is never lowered: a new probe is
merged into the cached one, keeping the higher of each. The load at probe time is recorded (the
1-minute load average per core, and the probe's CPU time over its wall time and threads); a
ceiling probed under load is probed again once the machine is quieter, and `profile` probes
again when a run beats its roof. They are cached per machine, provider, threads and dtype in
$ONNXFLOPS_CACHE_DIR, else $XDG_CACHE_HOME/onnxflops, else ~/.cache/onnxflops. `quick`
measures small problems (for tests): a rough figure, cached apart.
"""

from __future__ import annotations

import json
import math
import os
import platform
import time
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from onnxflops.profiling import budget
from onnxflops.profiling.runtime import SessionConfig, import_ort, make_session, random_input

# The compute probes per provider (full, quick): ("Conv", channels in, channels out, kernel,
# side) or ("MatMul", m, k, n), its second operand a weight. On CPU: the shapes of ResNet-50's
# fastest convolutions and MatMuls of a Llama prefill's size, each a millisecond or three a run
# on one core (150-168 GFLOP/s under a load of 5 on 2 cores, as quiet). Larger ones ran slower
# there (a 256-channel 3×3 convolution on 56x56 and a 1024² MatMul: 77-84 GFLOP/s, their
# operands beyond a core's 2 MB of L2).
_COMPUTE = {"cpu": ((("Conv", 128, 128, 3, 28), ("Conv", 64, 64, 3, 56), ("Conv", 256, 256, 3, 14),
                     ("Conv", 1024, 256, 1, 14), ("MatMul", 256, 1024, 256),
                     ("MatMul", 512, 512, 512), ("MatMul", 1024, 512, 512)),
                    (("Conv", 32, 32, 3, 14), ("Conv", 128, 64, 1, 7), ("MatMul", 64, 256, 64),
                     ("MatMul", 128, 128, 128))),
            "cuda": ((("Conv", 512, 512, 3, 64), ("Conv", 512, 512, 3, 128),
                      ("Conv", 2048, 512, 1, 32), ("MatMul", 4096, 2048, 2048),
                      ("MatMul", 8192, 8192, 8192), ("MatMul", 4096, 32768, 4096)),
                     (("Conv", 128, 128, 3, 32), ("MatMul", 1024, 512, 512),
                      ("MatMul", 1024, 1024, 1024)))}
_COPY_ELEMENTS = {"cpu": (64 << 20, 1 << 20), "cuda": (256 << 20, 4 << 20)}
# Sides of the square weights the streaming probes read (full, quick): on CPU 16 MB and 64 MB
# of float32, in and beyond a large last-level cache, as a model's weights may be.
_STREAM_SIDES = {"cpu": ((2048, 4096), (256, 512)), "cuda": ((8192, 16384), (1024, 2048))}
# Fewest runs and seconds spent per measurement (full, quick), compute then bandwidth: the best
# run is kept, so more runs mean less chance that other work on the machine lowers the figure.
# The seven compute probes take about 2 s in all.
_RUNS = {"compute": ((10, 0.25), (3, 0.0)), "bandwidth": ((10, 1.0), (3, 0.0))}
# Part of the cache key: ceilings measured by other probes are measured again.
_PROBES = ("probes=weights-stored:conv3x3@28,56,14,conv1x1,matmul-x3;stream=gemv,sum,copy;"
           "one-thread=cpu-time")
# A probe ran under load when the load average per core was above this at its start, or its
# threads got less than this share of the CPU time they would have had alone.
_LOADED_PER_CORE = 1.0
_LOADED_CPU_SHARE = 0.75
_MORE_RUNS_UNDER_LOAD = 4
_DATE = "%Y-%m-%dT%H:%M:%S"  # measured_at, local time


@dataclass
class Ceilings:
    peak_flops_per_s: float
    bandwidth_bytes_per_s: float
    dtype: str
    quick: bool
    measured_at: str
    # The 1-minute load average per core when the probes started, and the probes' CPU time over
    # their wall time × threads (about 1 alone on the machine); None: not recorded.
    load_per_core: float | None = None
    cpu_share: float | None = None

    @property
    def probed_under_load(self) -> bool:
        """Other work may have lowered the probes (unknown counts as loaded)."""
        return self.load_per_core is None or self.cpu_share is None \
            or self.load_per_core > _LOADED_PER_CORE or self.cpu_share < _LOADED_CPU_SHARE

    def probed_within(self, seconds: float) -> bool:
        """Probed less than `seconds` ago (an unreadable date is long ago)."""
        try:
            then = time.mktime(time.strptime(self.measured_at, _DATE))
        except (ValueError, OverflowError):
            return False
        return 0 <= time.time() - then < seconds

    def merged(self, other: "Ceilings") -> "Ceilings":
        """The higher of each ceiling: a probe lowered by other work never lowers a roof."""
        best = max(self, other, key=lambda c: c.peak_flops_per_s)
        quieter = min(self, other, key=lambda c: c.load_per_core if c.load_per_core is not None
                      else float("inf"))
        return replace(best, bandwidth_bytes_per_s=max(self.bandwidth_bytes_per_s,
                                                        other.bandwidth_bytes_per_s),
                       load_per_core=quieter.load_per_core, cpu_share=quieter.cpu_share)

    def raised_to(self, flops: float, bytes_moved: float, seconds: float) -> "Ceilings":
        """The roofs raised just enough that a kernel doing this work in `seconds` is not above
        them: the peak to its FLOP/s, the bandwidth to its bytes per second."""
        if seconds <= 0:
            return self
        return replace(self, peak_flops_per_s=max(self.peak_flops_per_s, flops / seconds),
                       bandwidth_bytes_per_s=max(self.bandwidth_bytes_per_s,
                                                 bytes_moved / seconds))

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
    key = _key(config, dtype, quick)
    cached = _entry(_read(cache_dir() / "ceilings.json").get(key))
    if cached is not None and not refresh and not (
            cached.probed_under_load and _quieter_than(cached)):
        return cached
    return remember(config, dtype, quick, measure(config, dtype, quick))


def remember(config: SessionConfig, dtype: str, quick: bool, ceilings: Ceilings) -> Ceilings:
    """`ceilings` merged into the cached ones (the higher of each) and cached: what a probe
    measured, or the roofs a run reached above them (so the next estimate is no lower)."""
    path = cache_dir() / "ceilings.json"
    key = _key(config, dtype, quick)
    cache = _read(path)
    cached = _entry(cache.get(key))
    if cached is not None:
        ceilings = cached.merged(ceilings)
    cache[key] = asdict(ceilings)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(json.dumps(cache, indent=1, sort_keys=True))
        temporary.replace(path)
    except OSError:
        pass  # an unwritable cache: measured again next time
    return ceilings


def _key(config: SessionConfig, dtype: str, quick: bool) -> str:
    return "|".join([_machine(), config.provider, f"device={config.device_id}",
                     f"threads={config.threads or 'default'}", dtype,
                     "quick" if quick else "full", _PROBES])


def _entry(data) -> Ceilings | None:
    """A cached entry, or None where it is not one this version wrote."""
    names = {f.name for f in fields(Ceilings)}
    if not isinstance(data, dict) or not set(data) <= names:
        return None
    try:
        entry = Ceilings(**data)
    except TypeError:
        return None
    ok = all(isinstance(v, (int, float)) and v > 0
             for v in (entry.peak_flops_per_s, entry.bandwidth_bytes_per_s))
    return entry if ok else None


def _load_per_core() -> float | None:
    try:
        return os.getloadavg()[0] / (os.cpu_count() or 1)
    except OSError:
        return None


def _quieter_than(cached: Ceilings) -> bool:
    """The machine is now clearly less loaded than when `cached` was probed."""
    now = _load_per_core()
    if now is None:
        return False
    then = cached.load_per_core if cached.load_per_core is not None else float("inf")
    return now < min(_LOADED_PER_CORE, 0.75 * then)


def measure(config: SessionConfig, dtype: str = "float32", quick: bool = False) -> Ceilings:
    level = 1 if quick else 0
    probes = _compute_probes(config.provider, level, dtype)
    streams = _bandwidth_probes(config.provider, level, dtype)
    if config.provider == "cpu":
        itemsize = np.dtype(dtype).itemsize
        largest = max(sum(math.prod(s) for s in shapes) * itemsize
                      for _, shapes, _ in probes + streams)
        need = largest + budget.RUNTIME_BYTES
        budget.check_memory(need, f"measuring the ceilings would need about {need / 2**30:.1f} "
                                  "GiB", "or pass --quick (small probes) or --no-ceilings")
    load = _load_per_core()
    # Under load a run seldom has the machine to itself: more runs, more chances that one has.
    more = _MORE_RUNS_UNDER_LOAD if load is None or load > _LOADED_PER_CORE else 1
    usage: list[tuple[float, float]] = []  # (CPU seconds, wall seconds) of each probe's runs
    runs, seconds = _RUNS["compute"][level]
    peak = max(flops / _best_time(model, config, shapes, dtype, runs * more, seconds * more, usage)
               for model, shapes, flops in probes)
    runs, seconds = _RUNS["bandwidth"][level]
    bandwidth = max(moved / _best_time(model, config, shapes, dtype, runs * more, seconds * more,
                                       usage)
                    for model, shapes, moved in streams)
    cpu, wall = sum(u[0] for u in usage), sum(u[1] for u in usage)
    # While a CPU probe runs, each of its threads computes or spins: alone on the machine its
    # CPU time is about wall time × threads. On CUDA the host mostly waits: no share there.
    threads = config.threads or os.cpu_count() or 1
    share = min(cpu / (wall * threads), 1.0) if config.provider == "cpu" and wall > 0 else 1.0
    return Ceilings(peak, bandwidth, dtype, quick, time.strftime(_DATE),
                    load, share)


def _compute_probes(provider: str, level: int, dtype: str) -> list[tuple[bytes, list, int]]:
    """(model, input shapes then output shape, FLOPs) of each compute-bound probe: FLOPs
    2·MACs, its weight (the shape after the input's) stored in the model."""
    probes = []
    for op, *dims in _COMPUTE[provider][level]:
        if op == "Conv":
            c_in, c_out, k, side = dims
            shapes = [[1, c_in, side, side], [c_out, c_in, k, k], [1, c_out, side, side]]
            flops, attrs = 2 * c_in * c_out * k * k * side * side, {"pads": [k // 2] * 4}
        else:
            m, k, n = dims
            shapes, flops, attrs = [[m, k], [k, n], [m, n]], 2 * m * k * n, {}
        probes.append((_single_op_model(op, dtype, shapes[:-1], shapes[-1], weights=1, **attrs),
                       shapes, flops))
    return probes


def _bandwidth_probes(provider: str, level: int, dtype: str) -> list[tuple[bytes, list, int]]:
    """(model, input shapes then output shape, bytes moved) of each bandwidth probe: a vector
    times each streamed weight and a sum over the larger one (read-dominated, the bytes read
    and written), and a copy (bytes read plus written)."""
    itemsize = np.dtype(dtype).itemsize
    sides = _STREAM_SIDES[provider][level]
    probes = [("MatMul", [[1, n], [n, n], [1, n]], (n * n + 2 * n) * itemsize) for n in sides]
    n = sides[-1]
    probes.append(("ReduceSum", [[n, n], [1, 1]], (n * n + 1) * itemsize))
    elements = _COPY_ELEMENTS[provider][level]
    probes.append(("Identity", [[elements], [elements]], 2 * elements * itemsize))
    return [(_single_op_model(op, dtype, shapes[:-1], shapes[-1]), shapes, moved)
            for op, shapes, moved in probes]


def _single_op_model(op_type: str, dtype: str, input_shapes: list[list[int]],
                     output_shape: list[int], weights: int = 0, **attrs) -> bytes:
    """One `op_type` node; its last `weights` inputs stored in the model (random values), as a
    model stores its weights, the others fed (x0, x1, ...)."""
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    names = [f"x{i}" for i in range(len(input_shapes))]
    fed = len(input_shapes) - weights
    rng = np.random.default_rng(0)
    stored = [numpy_helper.from_array(random_input(rng, shape, np.dtype(dtype).type), name)
              for name, shape in zip(names[fed:], input_shapes[fed:])]
    graph = helper.make_graph([helper.make_node(op_type, names, ["y"], **attrs)], op_type.lower(),
                              [helper.make_tensor_value_info(n, elem, shape)
                               for n, shape in zip(names[:fed], input_shapes[:fed])],
                              [helper.make_tensor_value_info("y", elem, output_shape)], stored)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8  # any onnxruntime of the last years runs IR 8
    return model.SerializeToString()


def _best_time(model: bytes, config: SessionConfig, shapes: list[list[int]], dtype: str,
               runs: int, seconds: float, usage: list | None = None) -> float:
    """Seconds of the fastest of at least `runs` runs taking at least `seconds` in all, fed
    inputs (of `shapes` but the last) and output (the last) bound in place (no allocation timed); the
    process's CPU seconds and the wall seconds of the timed runs are appended to `usage`."""
    ort = import_ort()
    session = make_session(model, SessionConfig(config.provider, config.threads, "all",
                                                config.device_id))
    device = "cuda" if config.provider == "cuda" else "cpu"
    rng = np.random.default_rng(0)
    binding = session.io_binding()
    fed = {i.name for i in session.get_inputs()}  # the others are weights stored in the model
    for i, shape in enumerate(shapes[:-1]):
        if f"x{i}" not in fed:
            continue
        x = random_input(rng, shape, np.dtype(dtype).type)
        binding.bind_ortvalue_input(f"x{i}", ort.OrtValue.ortvalue_from_numpy(x, device,
                                                                              config.device_id))
    out = ort.OrtValue.ortvalue_from_shape_and_type(shapes[-1], np.dtype(dtype), device,
                                                    config.device_id)
    binding.bind_ortvalue_output("y", out)
    session.run_with_iobinding(binding)  # warm-up
    # On one CPU thread a run computes on this thread alone, so its CPU seconds are the time it
    # held the core: other work on the machine, which took the rest of its wall time, slows a
    # kernel no more than that, and a model's nodes measured later on a quieter machine may run
    # at that speed.
    held_core = config.provider == "cpu" and config.threads == 1
    times: list[float] = []
    walls: list[float] = []
    cpu_start = time.process_time()
    while len(times) < runs or sum(walls) < seconds:
        cpu = time.process_time()
        start = time.perf_counter()
        session.run_with_iobinding(binding)
        binding.synchronize_outputs()
        walls.append(time.perf_counter() - start)
        times.append(min(walls[-1], time.process_time() - cpu) if held_core else walls[-1])
    if usage is not None:
        usage.append((time.process_time() - cpu_start, sum(walls)))
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
