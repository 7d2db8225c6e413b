"""Write Llama-shaped decoder graphs exported from meta-device modules: no weight bytes anywhere.

    python bench/llama.py OUT.onnx [--preset llama3-8b|llama2-70b|tiny] [--layers N] [--tokens 512]

The model is transformers' LlamaForCausalLM built under `torch.device("meta")` (see models/llama.py);
onnxflops' torch converter exports it with every initializer a header (name, dtype, shape, marked
external with the data file never written). The file counts like the full model: `onnxflops count
OUT.onnx` reads no weights. Prints a JSON line with the file and its hand-derived MACs and params.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
# The repository's models package, not bench/models.py beside this script.
sys.path[:] = [str(BENCH.parent)] + [p for p in sys.path if Path(p or ".").resolve() != BENCH]


def llama_onnx(preset: str = "llama3-8b", layers: int | None = None, tokens: int = 512):
    """The graph-only ModelProto of a preset Llama with `layers` decoder layers (default: all)."""
    from onnxflops.converters import torch_to_onnx
    from onnxflops.models import llama

    return torch_to_onnx(llama.llama_on_meta(preset, layers), (llama.token_ids(tokens),))


def main(argv: list[str] | None = None) -> int:
    import onnx

    from onnxflops.models import llama

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("output", type=Path)
    p.add_argument("--preset", choices=sorted(llama.PRESETS), default="llama3-8b")
    p.add_argument("--layers", type=int, help="decoder layers (default: the preset's)")
    p.add_argument("--tokens", type=int, default=llama.TOKENS)
    args = p.parse_args(argv)
    onnx.save(llama_onnx(args.preset, args.layers, args.tokens), args.output)
    print(json.dumps({"path": str(args.output), "preset": args.preset,
                      "layers": args.layers or llama.PRESETS[args.preset].layers,
                      "tokens": args.tokens,
                      "macs": llama.analytic_macs(args.preset, args.layers, args.tokens),
                      "params": llama.analytic_params(args.preset, args.layers)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
