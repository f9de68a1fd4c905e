"""Training-step speed on a CUDA GPU: eager against torch.compile, and the host's share.

    python scripts/bench_gpu.py [--models small,base] [--batch 128] [--src-len 34] [--tgt-len 26]
        [--precision bf16] [--compile] [--iterations 20]

A step is `bench_model.training_step` (forward under autocast, the trainer's label-smoothed
loss, backward, fused AdamW) on a fixed random batch (KFTT's mean sentence lengths by default),
timed with the device synchronized, median of `--iterations` after a warm-up. MFU is
`bench_model.training_flops` per second over this GPU's bf16 matrix-multiply rate, measured here
(an 8192³ product). Eager steps launch every kernel from Python, so a slow host CPU bounds them
however fast the GPU is: the host's time for one step with the GPU's work excluded is printed
beside it (the time to issue a step, not waiting for the GPU), with a pure-Python loop timed as
the host's speed.
`--compile` also times the model under `torch.compile` (compiling takes minutes on a slow host).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import replace
from functools import partial

import torch
from bench_model import (
    load_config,
    random_batch,
    time_alternately,
    training_flops,
    training_step,
)

from llm_from_scratch.device import resolve_device
from llm_from_scratch.model.transformer import Seq2SeqTransformer
from llm_from_scratch.precision import Precision, matmul_rate
from llm_from_scratch.training.config import TrainingConfig
from llm_from_scratch.training.optim import build_optimizer

VOCAB = 8000
PAD_ID = 0
DEVICE = "cuda"


def synchronize() -> None:
    torch.cuda.synchronize()


def python_loop_seconds() -> float:
    """Seconds for a fixed pure-Python loop: the host's speed at launching work."""
    start = time.perf_counter()
    total = 0
    for i in range(3_000_000):
        total += i & 7
    return time.perf_counter() - start


def median_step(step, warmup: int, iterations: int) -> float:
    """Median seconds of `step` with the GPU's work done, after `warmup` steps."""

    def step_and_wait() -> None:
        step()
        synchronize()

    return time_alternately({"step": step_and_wait}, warmup, iterations)["step"]


def host_seconds(step, iterations: int) -> float:
    """Median seconds the host takes to issue one step (Python and kernel launches), timed
    without waiting for the GPU: where it equals the step's time, the host bounds the step."""
    times = []
    for _ in range(iterations):
        synchronize()
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    synchronize()
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default="small,base")
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--src-len", type=int, default=34)
    parser.add_argument("--tgt-len", type=int, default=26)
    parser.add_argument("--precision", default="bf16", choices=["bf16", "fp16", "fp32"])
    parser.add_argument("--compile", action="store_true")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument(
        "--table-rows", action="store_true", help="`make bench`'s rows on stdout, details on stderr"
    )
    args = parser.parse_args()
    if not torch.cuda.is_available():
        message = "bench_gpu: no CUDA GPU here (scripts/bench_model.py times CPUs)"
        if args.table_rows:  # `make bench` on a CPU machine: nothing to time, not a failure
            print(f"{message}; skipped", file=sys.stderr)
            return
        sys.exit(message)
    details = sys.stderr if args.table_rows else sys.stdout
    device = resolve_device(DEVICE)  # cuDNN attention off, as training has it
    precision = Precision(device, args.precision)
    gpu = torch.cuda.get_device_name()
    print(f"{gpu}, torch {torch.__version__}, {args.precision}", file=details)
    loop = python_loop_seconds()
    print(f"host: a pure-Python loop of 3M iterations in {loop:.3f} s", file=details)
    peak = matmul_rate(torch.bfloat16, size=8192, repeats=10, device=device)
    print(f"measured bf16 GEMM peak: {peak / 1e12:,.0f} TFLOP/s", file=details)
    tokens = args.batch * (args.src_len + args.tgt_len)
    shape = f"batch {args.batch} × {args.src_len}+{args.tgt_len} tokens"
    print(f"{shape}, vocabulary {VOCAB}\n", file=details)
    print(
        "| model | mode | ms / step | host ms / step | tokens / s | MFU | vs eager |", file=details
    )
    print("|---|---|---:|---:|---:|---:|---:|", file=details)
    training = TrainingConfig()
    for name in args.models.split(","):
        torch.manual_seed(0)
        cfg = replace(load_config(name), dropout=0.1)
        src, src_mask, tgt = (
            t.to(device) for t in random_batch(args.batch, args.src_len, args.tgt_len, VOCAB)
        )
        seconds_of: dict[str, float] = {}
        for mode in ("eager", "compiled") if args.compile else ("eager",):
            model = Seq2SeqTransformer(cfg, VOCAB, VOCAB, PAD_ID).to(device).train()
            flops = training_flops(model, args.batch * args.src_len, args.batch * args.tgt_len)
            optimizer = build_optimizer(model, training, device)
            forward = torch.compile(model) if mode == "compiled" else model
            step = partial(training_step, forward, optimizer, precision, src, src_mask, tgt)
            started = time.perf_counter()
            seconds = median_step(step, args.warmup, args.iterations)
            host = host_seconds(step, args.iterations)
            seconds_of[mode] = seconds
            print(
                f"| {name} | {mode} | {seconds * 1e3:.1f} | {host * 1e3:.1f} | "
                f"{tokens / seconds:,.0f} | {flops / seconds / peak:.1%} | "
                f"{seconds_of['eager'] / seconds:.2f}× |",
                file=details,
                flush=True,
            )
            if mode == "compiled":
                spent = time.perf_counter() - started
                print(f"(compiling and timing {name}: {spent:.0f} s)", file=details)
        if args.table_rows:
            eager, compiled = seconds_of["eager"], seconds_of.get("compiled")
            reference = f"{tokens / compiled:,.0f} (compiled)" if compiled else "not run"
            ratio = f"{compiled / eager:.2f}" if compiled else ""
            print(
                f"| GPU training tokens/s, {name}, eager | {tokens / eager:,.0f} | {reference} "
                f"| {ratio} | {gpu}, {args.precision}, {shape}, MFU {flops / eager / peak:.1%} |"
            )


if __name__ == "__main__":
    main()
