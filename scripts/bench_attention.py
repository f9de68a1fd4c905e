"""Attention forward + backward: our kernel choice against SDPA's fused (flash) and math backends.

For each length, the batch the token budget gives (`--tokens` per side, 64 × 24 by default) of
self-attention over padded sequences (the encoder's case) and of causal self-attention (the
decoder's), 4 heads of 64 dimensions as in `model=small`. Each backend runs forward and backward of
the same inputs; they are timed alternately in this one process, best of `--iterations` after a
warm-up, in bf16 (where the CPU has it natively) and fp32. "ours" is `model.attention.attend`,
which picks its kernel per device and length; `--compile` adds `torch.compile` of the explicit
path (slow to compile).

    .venv/bin/python scripts/bench_attention.py [--lengths 8 24 60 128 256] [--compile]
        [--table-rows]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.nn.attention import SDPBackend, sdpa_kernel

from llm_from_scratch.model.attention import attend, explicit_attention
from llm_from_scratch.model.masks import key_padding_to_attention_mask
from llm_from_scratch.precision import cpu_supports_bf16

HEADS, HEAD_DIM = 4, 64
Kernel = Callable[[Tensor, Tensor, Tensor, Tensor | None, bool], Tensor]


def ours(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, is_causal: bool) -> Tensor:
    return attend(q, k, v, mask, is_causal)[0]


def sdpa_backend(backend: SDPBackend) -> Kernel:
    def kernel(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, is_causal: bool) -> Tensor:
        with sdpa_kernel(backend):
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=is_causal)

    return kernel


def compiled_explicit() -> Kernel:
    compiled = torch.compile(explicit_attention, dynamic=False)
    return lambda q, k, v, mask, is_causal: compiled(q, k, v, mask, is_causal)[0]


def time_kernels(
    kernels: dict[str, Kernel],
    length: int,
    batch: int,
    dtype: torch.dtype,
    causal: bool,
    iterations: int,
) -> dict[str, float]:
    """Best seconds of forward + backward per kernel, the kernels interleaved."""
    generator = torch.Generator().manual_seed(length)
    q, k, v = (
        torch.randn(batch, HEADS, length, HEAD_DIM, generator=generator).to(dtype).requires_grad_()
        for _ in range(3)
    )
    mask = None
    if not causal:  # sequences of half to full length, as a length-bucketed batch holds
        lengths = torch.randint(length // 2 + 1, length + 1, (batch,), generator=generator)
        mask = key_padding_to_attention_mask(torch.arange(length) < lengths[:, None])
    upstream = torch.randn(batch, HEADS, length, HEAD_DIM, generator=generator).to(dtype)
    best = dict.fromkeys(kernels, float("inf"))
    for iteration in range(iterations + 2):
        for name, kernel in kernels.items():
            start = time.perf_counter()
            torch.autograd.grad(kernel(q, k, v, mask, causal), (q, k, v), upstream)
            if iteration >= 2:  # the first two are warm-up (and compilation)
                best[name] = min(best[name], time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[8, 16, 24, 32, 60, 128, 256])
    parser.add_argument("--tokens", type=int, default=64 * 24, help="tokens per batch (one side)")
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--compile", action="store_true", help="also torch.compile's kernel")
    parser.add_argument("--table-rows", action="store_true", help="print `make bench` rows only")
    args = parser.parse_args()
    details = sys.stderr if args.table_rows else sys.stdout

    kernels: dict[str, Kernel] = {
        "ours": ours,
        "SDPA flash": sdpa_backend(SDPBackend.FLASH_ATTENTION),
        "SDPA math": sdpa_backend(SDPBackend.MATH),
    }
    if args.compile:
        kernels["compiled explicit"] = compiled_explicit()
    dtypes = {"bf16": torch.bfloat16} if cpu_supports_bf16() else {}
    dtypes["fp32"] = torch.float32
    threads = torch.get_num_threads()
    print(
        f"Attention forward + backward on CPU, {HEADS} heads × {HEAD_DIM}, batch × length = "
        f"{args.tokens} tokens, {threads} threads, best of {args.iterations}; ms:\n",
        file=details,
    )
    print(f"| precision | mask | length | batch | {' | '.join(kernels)} |", file=details)
    print("|---|---|---:|---:|" + "---:|" * len(kernels), file=details)
    for dtype_name, dtype in dtypes.items():
        for causal in (False, True):
            mask_name = "causal" if causal else "padding"
            for length in args.lengths:
                batch = max(1, args.tokens // length)
                best = time_kernels(kernels, length, batch, dtype, causal, args.iterations)
                cells = " | ".join(f"{best[name] * 1e3:.2f}" for name in kernels)
                print(
                    f"| {dtype_name} | {mask_name} | {length} | {batch} | {cells} |", file=details
                )
                if args.table_rows:
                    flash = best["SDPA flash"]
                    print(
                        f"| attention fwd+bwd ms, {dtype_name}, {mask_name}, length {length} | "
                        f"{best['ours'] * 1e3:.2f} | {flash * 1e3:.2f} (SDPA flash; math "
                        f"{best['SDPA math'] * 1e3:.2f}) | {flash / best['ours']:.2f} | "
                        f"batch {batch}, {HEADS} heads × {HEAD_DIM}, {threads} threads |"
                    )


if __name__ == "__main__":
    main()
