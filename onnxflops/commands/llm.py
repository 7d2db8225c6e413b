"""`onnxflops llm`: serving costs of a causal language model on named hardware."""

from __future__ import annotations

import argparse

from onnxflops.commands.common import add_command, check_output_options, print_result
from onnxflops.serving.hardware import HARDWARE
from onnxflops.serving.phases import DEFAULT_DTYPE, DTYPE_BITS


def register(sub) -> None:
    p = add_command(
        sub, "llm", "prefill, decode, KV cache and latency of a causal LM",
        "Serving costs of a causal language model from its own graphs: the prompt pass, each "
        "decode step with its KV cache, params active per token, and a roofline estimate on "
        "named hardware.",
        model="a transformers config.json (or a folder holding one), or a "
              "package.module:factory spec returning a transformers model",
        rows="phase", page="the decode cost and time against the context and the time per op "
                           "type")
    p.add_argument("--prompt", type=int, required=True, metavar="TOKENS", help="prompt length")
    p.add_argument("--generate", type=int, required=True, metavar="TOKENS",
                   help="tokens generated")
    p.add_argument("--batch", "-b", type=int, default=1, metavar="N", help="sequences (default 1)")
    p.add_argument("--hardware", default="h100", metavar="NAME",
                   help=f"one of {', '.join([*HARDWARE, 'cpu'])} (default h100; cpu: this "
                        "machine's measured ceilings)")
    p.add_argument("--dtype", choices=list(DTYPE_BITS), default=None,
                   help="weights' dtype (default: the one the config names, its torch_dtype or "
                        f"dtype; {DEFAULT_DTYPE} where it names none)")
    p.add_argument("--kv-dtype", choices=list(DTYPE_BITS), default=None,
                   help="activations' and KV cache's dtype (default bf16; fp32/fp16 with such "
                        "weights)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from onnxflops.serving import llm

    check_output_options(args)
    report = llm(args.model, prompt=args.prompt, generate=args.generate, batch=args.batch,
                 hardware=args.hardware, dtype=args.dtype, kv_dtype=args.kv_dtype)
    print_result(report, args, page=_page)
    return 0


def _page(report) -> str:
    from onnxflops.html.llm import llm_html

    return llm_html(report)
