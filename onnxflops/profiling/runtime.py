"""onnxruntime sessions as a benchmark needs them: the provider checked, feeds made, runs timed.

onnxruntime is imported here only, and only when a model is run: counting never needs it.
"""

from __future__ import annotations

import math
import os
import re
import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import onnx

from onnxflops.errors import OnnxFlopsError, first_line
from onnxflops.profiling import OPT_LEVELS, PROVIDERS

_IR_LIMIT = re.compile(r"max supported IR version: (\d+)")


def import_ort():
    try:
        import onnxruntime
    except ImportError:
        raise OnnxFlopsError("running a model needs onnxruntime: pip install onnxruntime "
                             "(or onnxruntime-gpu for --provider cuda)") from None
    return onnxruntime


def check_provider(provider: str) -> str:
    """The onnxruntime name of `provider`, or one line saying what to install to get it."""
    if provider not in PROVIDERS:
        raise OnnxFlopsError(f"unknown provider '{provider}': choose one of {', '.join(PROVIDERS)}")
    ort = import_ort()
    name = PROVIDERS[provider]
    available = ort.get_available_providers()
    if name not in available:
        raise OnnxFlopsError(
            f"provider '{provider}' is not available: this onnxruntime {ort.__version__} has only "
            f"{', '.join(p.removesuffix('ExecutionProvider') for p in available)}; for CUDA run "
            "'pip uninstall onnxruntime && pip install onnxruntime-gpu' on a machine with an NVIDIA "
            "GPU, its driver and CUDA 12 with cuDNN 9")
    return name


@dataclass
class SessionConfig:
    provider: str = "cpu"
    threads: int | None = None  # None: onnxruntime's default (one per physical core)
    opt_level: str = "all"
    device_id: int = 0

    def __post_init__(self):
        if self.opt_level not in OPT_LEVELS:
            raise OnnxFlopsError(f"unknown optimization level '{self.opt_level}': choose one of "
                                 f"{', '.join(OPT_LEVELS)}")
        if self.threads is not None:
            if isinstance(self.threads, bool) or not isinstance(self.threads, int) \
                    or self.threads < 1:
                raise OnnxFlopsError(f"--threads {self.threads}: must be a positive integer")
            # More threads than the machine has cores only makes the runs slower.
            self.threads = min(self.threads, os.cpu_count() or 1)


# Bounds on what one profile asks of the machine.
MAX_RUNS = 1_000_000  # timed, warm-up or profiled runs
MAX_LOOP_TRIPS = 1_000_000  # iterations of one Loop of the model, per run
FEEDS_SHARE_OF_MEMORY = 0.5  # the random inputs may take at most this share of available memory


def check_run_counts(**counts: int) -> None:
    """Each count of runs (by option name: runs=, warmup=) a whole number within MAX_RUNS;
    warm-up runs may be 0."""
    for option, value in counts.items():
        low = 0 if option == "warmup" else 1
        flag = "--" + option.replace("_", "-")
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= MAX_RUNS:
            raise OnnxFlopsError(f"{flag} {value}: must be a whole number from {low} to {MAX_RUNS:,}")


def make_session(model: bytes | str, config: SessionConfig, *, profile_prefix: str | None = None,
                 optimized_path: str | None = None):
    """An InferenceSession on the configured provider; fails with one line if it falls back."""
    ort = import_ort()
    provider = check_provider(config.provider)
    options = ort.SessionOptions()
    # 4, fatal only: the NCHWc "hardware specific model" notice is expected, and a run-time error
    # is reported in one line from its exception (see _run_once).
    options.log_severity_level = 4
    options.graph_optimization_level = getattr(ort.GraphOptimizationLevel,
                                               OPT_LEVELS[config.opt_level])
    if config.threads is not None:
        options.intra_op_num_threads = config.threads
    if profile_prefix is not None:
        options.enable_profiling = True
        options.profile_file_prefix = profile_prefix
    if optimized_path is not None:
        # Only the graph is read back: weights go to a side file, so models over 2 GB save too.
        options.optimized_model_filepath = optimized_path
        options.add_session_config_entry(
            "session.optimized_model_external_initializers_file_name", "weights.bin")
        options.add_session_config_entry(
            "session.optimized_model_external_initializers_min_size_in_bytes", "1024")
    providers: list[Any] = [provider]
    if config.provider == "cuda":
        providers = [(provider, {"device_id": config.device_id}), "CPUExecutionProvider"]
    try:
        session = ort.InferenceSession(model, options, providers=providers)
    except Exception as e:  # onnxruntime raises its own Fail/InvalidGraph/... types
        raise OnnxFlopsError(f"onnxruntime cannot load the model: {first_line(e)}") from None
    if session.get_providers()[0] != provider:
        raise OnnxFlopsError(f"onnxruntime could not start {provider} (no usable GPU or CUDA "
                             "libraries missing) and fell back to the CPU")
    return session


def runnable(model: onnx.ModelProto) -> bytes:
    """The model as onnxruntime takes it: every node named (its profile events are by node name)
    and the IR version lowered where the installed onnxruntime supports an older one only."""
    ort = import_ort()
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    taken = {n.name for n in copy.graph.node}
    for i, node in enumerate(copy.graph.node):
        if not node.name:
            node.name = _fresh(f"{node.op_type}_{i}", taken)
    try:
        ort.InferenceSession(copy.SerializeToString(), providers=["CPUExecutionProvider"],
                             sess_options=_no_optimization(ort))
    except Exception as e:
        limit = _IR_LIMIT.search(str(e))
        if limit is None:
            raise OnnxFlopsError(f"onnxruntime cannot load the model: {first_line(e)}") from None
        copy.ir_version = int(limit.group(1))
    return copy.SerializeToString()


def _no_optimization(ort):
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    return options


def _fresh(base: str, taken: set[str]) -> str:
    name, k = base, 0
    while name in taken:
        k += 1
        name = f"{base}_{k}"
    taken.add(name)
    return name


def random_input(rng: np.random.Generator, shape: list[int], dtype) -> np.ndarray:
    """Random data for one input: standard normal floats, all-true bools, or integers 0 and 1
    (valid indices for any table)."""
    # Made in the input's own dtype (float16 from float32 numbers: numpy draws no narrower).
    if dtype in (np.float32, np.float64):
        return rng.standard_normal(shape, dtype=dtype)
    if np.dtype(dtype).kind in "fcV":
        # float16, complex, and the types ml_dtypes adds (bfloat16, float8, float4, int4, uint4),
        # which numpy does not count as floating or integer: converted from float32 draws.
        return rng.standard_normal(shape, dtype=np.float32).astype(dtype)
    if dtype == np.bool_:
        return np.ones(shape, dtype)
    return rng.integers(0, 2, size=shape, dtype=dtype)


def random_feeds(model: onnx.ModelProto, given: dict[str, np.ndarray] | None = None,
                 seed: int = 0) -> dict[str, np.ndarray]:
    """One array per real input of a bound model: `random_input`, or the arrays the caller gave."""
    specs = _input_specs(model)
    made = random_arrays({k: v for k, v in specs.items() if not (given and k in given)}, seed)
    return {name: given[name] if given and name in given else made[name] for name in specs}


def random_arrays(specs: dict[str, tuple[list[int], Any]], seed: int = 0) -> dict[str, np.ndarray]:
    """`random_input` for each name → (shape, dtype), in order, from one generator seeded `seed`;
    refused in one line, before anything is allocated, where together they would not fit."""
    _check_feeds_fit({name: np.dtype(dtype).itemsize * math.prod(shape)
                      for name, (shape, dtype) in specs.items()})
    rng = np.random.default_rng(seed)
    return {name: random_input(rng, shape, dtype) for name, (shape, dtype) in specs.items()}


def input_sizes(model: onnx.ModelProto) -> dict[str, int]:
    """Bytes of each real input of a bound model (initializers that are inputs left out)."""
    return {name: np.dtype(dtype).itemsize * math.prod(shape)
            for name, (shape, dtype) in _input_specs(model).items()}


def _input_specs(model: onnx.ModelProto) -> dict[str, tuple[list[int], Any]]:
    """Each real input's (shape, numpy dtype), initializers that are inputs left out."""
    weights = {t.name for t in model.graph.initializer}
    return {vi.name: ([d.dim_value for d in vi.type.tensor_type.shape.dim],
                      onnx.helper.tensor_dtype_to_np_dtype(vi.type.tensor_type.elem_type))
            for vi in model.graph.input if vi.name not in weights}


def _check_feeds_fit(sizes: dict[str, int]) -> None:
    """Refuse, before allocating, inputs that together would not fit in memory."""
    available = _available_memory()
    if available and sum(sizes.values()) > FEEDS_SHARE_OF_MEMORY * available:
        largest = max(sizes, key=sizes.get)
        raise OnnxFlopsError(f"the model's inputs would take {_gib(sum(sizes.values()))} (input "
                             f"'{largest}' {_gib(sizes[largest])}), more than this machine can "
                             f"hold ({_gib(available)} available): use a smaller batch or "
                             "shape")


def _available_memory() -> int | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def _gib(n: int) -> str:
    return f"{n / 2**30:,.1f} GiB"


def runner(session, feeds: dict[str, np.ndarray], provider: str, device_id: int = 0) -> Callable:
    """A no-argument call that runs the model once. On CUDA the inputs are copied to the device
    once and the outputs stay there (I/O binding), and each call waits for the device, so that
    the time is the model's, not the host copies'."""
    if provider != "cuda":
        return lambda: session.run(None, feeds)
    ort = import_ort()
    binding = session.io_binding()
    for name, value in feeds.items():
        binding.bind_ortvalue_input(name, ort.OrtValue.ortvalue_from_numpy(value, "cuda",
                                                                           device_id))
    for out in session.get_outputs():
        binding.bind_output(out.name, "cuda", device_id)

    def run_bound():
        session.run_with_iobinding(binding)
        binding.synchronize_outputs()

    return run_bound


@dataclass
class Latency:
    """End-to-end times of the timed runs, in milliseconds."""
    times_ms: list[float]

    def percentile(self, q: float) -> float:
        return float(np.percentile(self.times_ms, q))

    @property
    def median(self) -> float:
        return self.percentile(50)

    def to_dict(self) -> dict[str, Any]:
        return {"median": self.median, "p90": self.percentile(90), "p99": self.percentile(99),
                "min": min(self.times_ms), "max": max(self.times_ms), "runs": len(self.times_ms)}


def time_runs(run: Callable, runs: int, warmup: int,
              progress: Callable[[float], None] | None = None) -> Latency:
    """`warmup` untimed runs (allocations, caches, lazy kernel choices), then `runs` timed ones."""
    check_run_counts(runs=runs, warmup=warmup)
    for _ in range(warmup):
        _run_once(run)
    times = []
    for i in range(runs):
        start = time.perf_counter_ns()
        _run_once(run)
        times.append((time.perf_counter_ns() - start) / 1e6)
        if progress is not None:
            progress((i + 1) / runs)
    return Latency(times)


def _run_once(run: Callable) -> None:
    """One run; what onnxruntime rejects only at run time (a shape its kernels refuse, a Loop
    that fails) is one line."""
    try:
        run()
    except Exception as e:  # noqa: BLE001 - onnxruntime raises its own Fail, InvalidArgument, ...
        raise OnnxFlopsError(f"onnxruntime failed running the model: {first_line(e)}") from None
