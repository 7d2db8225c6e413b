"""`onnxflops llm`: serving costs of a causal language model on named hardware."""

from __future__ import annotations

import argparse
import sys

from onnxflops.errors import OnnxFlopsError
from onnxflops.serving.hardware import HARDWARE
from onnxflops.serving.phases import DTYPE_BITS


def register(sub) -> None:
    p = sub.add_parser("llm", help="prefill, decode, KV cache and latency of a causal LM",
                       description="Serving costs of a causal language model from its own graphs: "
                                   "the prompt pass, each decode step with its KV cache, params "
                                   "active per token, and a roofline estimate on named hardware.")
    p.add_argument("model", help="a transformers config.json (or a folder holding one), or a "
                                 "package.module:factory spec returning a transformers model")
    p.add_argument("--prompt", type=int, required=True, metavar="TOKENS", help="prompt length")
    p.add_argument("--generate", type=int, required=True, metavar="TOKENS",
                   help="tokens generated")
    p.add_argument("--batch", "-b", type=int, default=1, metavar="N", help="sequences (default 1)")
    p.add_argument("--hardware", default="h100", metavar="NAME",
                   help=f"one of {', '.join([*HARDWARE, 'cpu'])} (default h100; cpu: this "
                        "machine's measured ceilings)")
    p.add_argument("--dtype", choices=list(DTYPE_BITS), default="bf16",
                   help="weights' dtype (default bf16)")
    p.add_argument("--kv-dtype", choices=list(DTYPE_BITS), default=None,
                   help="activations' and KV cache's dtype (default bf16; fp32/fp16 with such "
                        "weights)")
    p.add_argument("--json", action="store_true", help="print the JSON document")
    p.add_argument("--html", metavar="FILE",
                   help="also write a page with the decode cost and time against the context "
                        "and the time per op type")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from onnxflops.serving import llm

    report = llm(args.model, prompt=args.prompt, generate=args.generate, batch=args.batch,
                 hardware=args.hardware, dtype=args.dtype, kv_dtype=args.kv_dtype)
    sys.stdout.write(report.to_json() + "\n" if args.json else report.to_table())
    if args.html:
        from onnxflops.html.llm import llm_html

        try:
            with open(args.html, "w", encoding="utf-8") as f:
                f.write(llm_html(report))
        except OSError as e:
            raise OnnxFlopsError(f"{args.html}: cannot write ({e.strerror})") from None
    return 0
