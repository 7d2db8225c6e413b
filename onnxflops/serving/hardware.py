"""Named accelerators: published peak dense FLOP/s per dtype and memory bandwidth.

Every figure is the vendor's datasheet number without structured sparsity (datasheets print the
2:4-sparse figure beside it, twice as large). FLOP/s, not MAC/s: one multiply-add is 2 FLOPs.
"""

from __future__ import annotations

from dataclasses import dataclass

from onnxflops.errors import OnnxFlopsError

T = 1e12


@dataclass(frozen=True)
class Hardware:
    name: str
    peak_flops_per_s: dict[str, float]  # by compute dtype: fp32, bf16, fp16, int8
    bandwidth_bytes_per_s: float
    # The one dtype the device computes in whatever the weights' (the CPU provider: fp32).
    computes_in: str | None = None

    def peak(self, compute_dtype: str) -> float:
        """Peak FLOP/s for `compute_dtype`, or the fastest float one the table holds."""
        return self.peak_flops_per_s[self.precision(compute_dtype)]

    def precision(self, compute_dtype: str) -> str:
        """The dtype whose ceiling `peak(compute_dtype)` is: what the device really computes in."""
        if self.computes_in is not None:
            return self.computes_in
        if compute_dtype in self.peak_flops_per_s:
            return compute_dtype
        return max((k for k in self.peak_flops_per_s if k != "int8"),
                   key=self.peak_flops_per_s.__getitem__)


# NVIDIA H100 Tensor Core GPU datasheet (H100 SXM column): FP32 67 TFLOPS, BF16/FP16 Tensor Core
# 1,979 TFLOPS and INT8 3,958 TOPS with sparsity (half without). The H200 SXM's are the same
# (NVIDIA H200 Tensor Core GPU datasheet).
_HOPPER_SXM = {"fp32": 67 * T, "bf16": 989.5 * T, "fp16": 989.5 * T, "int8": 1979 * T}
_HOPPER_NVL = {"fp32": 60 * T, "bf16": 835.5 * T, "fp16": 835.5 * T, "int8": 1670.5 * T}

HARDWARE: dict[str, Hardware] = {
    # H100 SXM: 3.35 TB/s HBM3 (H100 datasheet).
    "h100": Hardware("NVIDIA H100 SXM", _HOPPER_SXM, 3.35e12),
    # H200 SXM: 4.8 TB/s HBM3e (H200 datasheet).
    "h200": Hardware("NVIDIA H200 SXM", _HOPPER_SXM, 4.8e12),
    # The same datasheets' other columns (with sparsity there, halved here). H100 PCIe: FP32 51
    # TFLOPS, BF16/FP16 1,513 TFLOPS, INT8 3,026 TOPS, 2 TB/s HBM2e. H100 NVL: FP32 60 TFLOPS,
    # BF16/FP16 1,671 TFLOPS, INT8 3,341 TOPS, 3.9 TB/s HBM3. H200 NVL: as the H100 NVL's
    # compute, 4.8 TB/s HBM3e.
    "h100pcie": Hardware("NVIDIA H100 PCIe",
                         {"fp32": 51 * T, "bf16": 756.5 * T, "fp16": 756.5 * T, "int8": 1513 * T},
                         2.0e12),
    "h100nvl": Hardware("NVIDIA H100 NVL", _HOPPER_NVL, 3.9e12),
    "h200nvl": Hardware("NVIDIA H200 NVL", _HOPPER_NVL, 4.8e12),
    # NVIDIA A100 Tensor Core GPU datasheet (A100 80GB SXM column): FP32 19.5 TFLOPS, BF16/FP16
    # Tensor Core 312 TFLOPS, INT8 624 TOPS, 2,039 GB/s HBM2e.
    "a100": Hardware("NVIDIA A100 80GB SXM",
                     {"fp32": 19.5 * T, "bf16": 312 * T, "fp16": 312 * T, "int8": 624 * T},
                     2.039e12),
    # NVIDIA L4 Tensor Core GPU datasheet: FP32 30.3 TFLOPS, BF16/FP16 Tensor Core 242 TFLOPS and
    # INT8 485 TOPS with sparsity (half without), 300 GB/s GDDR6.
    "l4": Hardware("NVIDIA L4",
                   {"fp32": 30.3 * T, "bf16": 121 * T, "fp16": 121 * T, "int8": 242.5 * T},
                   300e9),
    # AMD Instinct MI300X accelerator datasheet: FP32 matrix 163.4 TFLOPS, FP16/BF16 1,307.4
    # TFLOPS, INT8 2,614.9 TOPS (dense), 5.3 TB/s HBM3.
    "mi300x": Hardware("AMD Instinct MI300X",
                       {"fp32": 163.4 * T, "bf16": 1307.4 * T, "fp16": 1307.4 * T,
                        "int8": 2614.9 * T},
                       5.3e12),
}


def hardware(name: str | Hardware) -> Hardware:
    """A named accelerator, or 'cpu': this machine's measured ceilings (measured once, cached)."""
    if isinstance(name, Hardware):
        return name
    key = name.lower().replace(" ", "").replace("-", "").replace("_", "")
    key = {"h100sxm": "h100", "a10080gb": "a100", "a100sxm": "a100", "h200sxm": "h200"}.get(key, key)
    if key == "cpu":
        return local_cpu()
    if key not in HARDWARE:
        raise OnnxFlopsError(f"unknown hardware '{name}': choose one of "
                             f"{', '.join([*HARDWARE, 'cpu'])}")
    return HARDWARE[key]


def local_cpu(quick: bool = False) -> Hardware:
    """This machine under onnxruntime's CPU provider: its measured float32 ceilings (see
    onnxflops.profiling.ceilings), for every dtype (the CPU provider computes in float32)."""
    from onnxflops.profiling.ceilings import machine_ceilings
    from onnxflops.profiling.runtime import SessionConfig

    ceilings = machine_ceilings(SessionConfig(), "float32", quick=quick)
    peak = ceilings.peak_flops_per_s
    # Probed again once the machine is quieter (see profiling.ceilings); until then, said.
    name = "local CPU (measured under load)" if ceilings.probed_under_load else \
        "local CPU (measured)"
    return Hardware(name, {"fp32": peak}, ceilings.bandwidth_bytes_per_s, computes_in="fp32")
