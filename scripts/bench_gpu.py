"""Training-step speed on a CUDA GPU: eager, compiled and CUDA-graphed, with the host's share and
MFU against the measured and the datasheet's matrix-multiply peak.

    python scripts/bench_gpu.py [--models base] [--tokens 65536,32768,16384]
        [--modes compiled,eager,graphed] [--src-len 34] [--tgt-len 26] [--precision bf16]
        [--budget SECONDS] [--warmup 3] [--iterations 20] [--device cuda]

A step is `bench_model.training_step` (forward under autocast, the trainer's label-smoothed
loss, backward, fused AdamW) on a fixed random batch of `--tokens` padded source + target tokens
(KFTT's mean sentence lengths by default: 34 + 26 tokens a pair), timed with the device
synchronized, median of `--iterations` after a warm-up. Modes: `eager` launches every kernel from
Python; `compiled` is `torch.compile(model)`; `graphed` is
`torch.compile(model, mode="reduce-overhead")`, which replays the compiled forward and backward
as CUDA graphs (the optimizer's step stays eager). Each compiled entry starts from a reset
compiler, so it times one shape's compile (`first steps s`), as a run of fixed shapes pays it.
Mode by mode in `--modes`' order, every size of one before the next: by default compiled first
(the mode training uses, whose MFU a run is held to), then eager, then graphed, whose compile
costs the most; `vs eager` is printed below the table for a mode timed before eager.
MFU is `bench_model.training_flops` per second over the bf16 rate of an 8192³ product measured
in the same process, and over the datasheet's dense bf16 rate where the GPU is known. `host ms` is
the time to issue a step without waiting for the GPU: where it equals the step's, the host bounds
the step. `--budget`: stop starting entries that would not end in that many seconds (a lease's
minutes), marking them skipped. `--device cpu`: the same code with tiny sizes, a smoke test.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
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
MODES = ("eager", "compiled", "graphed")
# Dense bf16 (no sparsity) by the vendor's datasheets; the first name contained in the GPU's wins.
DATASHEET_BF16 = (
    ("H100 PCIe", 756e12),
    ("H100 NVL", 835e12),
    ("H100", 989e12),  # SXM
    ("H200", 989e12),  # SXM: the H100's arithmetic
    ("A100", 312e12),
    ("L40S", 362e12),
    ("L4", 121e12),
)


def datasheet_peak(gpu: str) -> float | None:
    return next((rate for name, rate in DATASHEET_BF16 if name in gpu), None)


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def python_loop_seconds() -> float:
    """Seconds for a fixed pure-Python loop: the host's speed at launching work."""
    start = time.perf_counter()
    total = 0
    for i in range(3_000_000):
        total += i & 7
    return time.perf_counter() - start


def median_step(step: Callable[[], None], device: torch.device, warmup: int, n: int) -> float:
    """Median seconds of `step` with the device's work done, after `warmup` steps."""

    def step_and_wait() -> None:
        step()
        synchronize(device)

    return time_alternately({"step": step_and_wait}, warmup, n)["step"]


def host_seconds(step: Callable[[], None], device: torch.device, iterations: int) -> float:
    """Median seconds the host takes to issue one step (Python and kernel launches), timed
    without waiting for the GPU."""
    times = []
    for _ in range(iterations):
        synchronize(device)
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    synchronize(device)
    return statistics.median(times)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default="base")
    parser.add_argument(
        "--tokens", default="65536,32768,16384", help="padded source + target tokens a step"
    )
    parser.add_argument("--modes", default="compiled,eager,graphed")
    parser.add_argument("--src-len", type=int, default=34)
    parser.add_argument("--tgt-len", type=int, default=26)
    parser.add_argument("--precision", default="bf16", choices=["bf16", "fp16", "fp32"])
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--budget", type=float, default=None, metavar="SECONDS")
    parser.add_argument("--device", default="cuda", help="cuda, cuda:N, or cpu (a smoke test)")
    parser.add_argument(
        "--table-rows", action="store_true", help="`make bench`'s rows on stdout, details on stderr"
    )
    args = parser.parse_args(argv)
    args.modes = args.modes.split(",")
    unknown = [mode for mode in args.modes if mode not in MODES]
    if unknown:
        parser.error(f"--modes: {unknown[0]!r} is not one of {', '.join(MODES)}")
    try:
        args.tokens = [int(tokens) for tokens in args.tokens.split(",")]
    except ValueError:
        parser.error(f"--tokens {args.tokens!r}: write numbers, e.g. 65536,32768")
    if any(tokens < args.src_len + args.tgt_len for tokens in args.tokens):
        parser.error(f"--tokens: each at least one pair's {args.src_len + args.tgt_len}")
    return args


def main() -> None:
    args = parse_args()
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        message = "bench_gpu: no CUDA GPU here (scripts/bench_model.py times CPUs)"
        if args.table_rows:  # `make bench` on a CPU machine: nothing to time, not a failure
            print(f"{message}; skipped", file=sys.stderr)
            return
        sys.exit(message)
    if args.device == "cpu" and "graphed" in args.modes:
        sys.exit("bench_gpu: --modes graphed replays CUDA graphs: a CUDA device only")
    started = time.perf_counter()
    out = sys.stderr if args.table_rows else sys.stdout
    device = resolve_device(args.device)  # cuDNN attention off, as training has it
    precision = Precision(device, args.precision)
    gpu = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU"
    print(f"{gpu}, torch {torch.__version__}, {args.precision}", file=out)
    print(f"host: a pure-Python loop of 3M iterations in {python_loop_seconds():.3f} s", file=out)
    size = 8192 if device.type == "cuda" else 1024
    peak = matmul_rate(torch.bfloat16, size=size, repeats=10, device=device)
    sheet = datasheet_peak(gpu)
    sheet_text = f"{sheet / 1e12:,.0f} TFLOP/s" if sheet else "not known for this device"
    print(
        f"bf16 matmul peak: measured {peak / 1e12:,.4g} TFLOP/s ({size}³); datasheet {sheet_text}",
        file=out,
    )
    print(f"pairs of {args.src_len}+{args.tgt_len} tokens, vocabulary {VOCAB}\n", file=out)
    print(
        "| model | tokens / step | mode | ms / step | host ms / step | tokens / s "
        "| MFU (measured peak) | MFU (datasheet) | vs eager | first steps s |",
        file=out,
    )
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|", file=out)
    training = TrainingConfig()
    seconds_of: dict[tuple[str, int], dict[str, float]] = {}  # (model, tokens): mode's seconds
    flops_of: dict[tuple[str, int], float] = {}
    cost: dict[str, float] = {}  # the last entry's seconds of each mode, to forecast the next
    # Mode by mode, each at every size, as long as the budget lasts.
    for mode in args.modes:
        for name in args.models.split(","):
            for tokens in args.tokens:
                batch = tokens // (args.src_len + args.tgt_len)
                padded = batch * (args.src_len + args.tgt_len)
                compiles = [seconds for other, seconds in cost.items() if other != "eager"]
                forecast = cost.get(mode, max(compiles, default=0.0) if mode != "eager" else 0.0)
                if (
                    args.budget is not None
                    and time.perf_counter() - started + forecast > args.budget
                ):
                    skipped = f"skipped: --budget {args.budget:.0f} s"
                    print(f"| {name} | {padded:,} | {mode} | {skipped} |{' |' * 6}", file=out)
                    continue
                entry_started = time.perf_counter()
                torch.manual_seed(0)
                cfg = replace(load_config(name), dropout=0.1)
                src, src_mask, tgt = (
                    t.to(device) for t in random_batch(batch, args.src_len, args.tgt_len, VOCAB)
                )
                model = Seq2SeqTransformer(cfg, VOCAB, VOCAB, PAD_ID).to(device).train()
                flops = training_flops(model, batch * args.src_len, batch * args.tgt_len)
                optimizer = build_optimizer(model, training, device)
                step = timed_step(mode, model, optimizer, precision, src, src_mask, tgt)
                first = time.perf_counter()
                step()  # the compile, where there is one
                synchronize(device)
                first = time.perf_counter() - first
                seconds = median_step(step, device, args.warmup, args.iterations)
                host = host_seconds(step, device, args.iterations)
                key = (name, padded)
                seconds_of.setdefault(key, {})[mode] = seconds
                flops_of[key] = flops
                cost[mode] = time.perf_counter() - entry_started
                eager = seconds_of[key].get("eager")
                print(
                    f"| {name} | {padded:,} | {mode} | {seconds * 1e3:.1f} | {host * 1e3:.1f} | "
                    f"{padded / seconds:,.0f} | {flops / seconds / peak:.1%} | "
                    f"{f'{flops / seconds / sheet:.1%}' if sheet else 'n/a'} | "
                    f"{f'{eager / seconds:.2f}×' if eager else ''} | {first:.1f} |",
                    file=out,
                    flush=True,
                )
                del model, optimizer, step
                if device.type == "cuda":
                    torch.cuda.empty_cache()
    for (name, padded), modes in seconds_of.items():
        timed = list(modes)  # in the order timed
        for mode in timed[: timed.index("eager")] if "eager" in modes else []:
            ratio = modes["eager"] / modes[mode]  # its row was printed before eager's time
            print(f"{name}, {padded:,} tokens: {mode} {ratio:.2f}× eager", file=out)
    if args.table_rows:
        for (name, padded), modes in seconds_of.items():
            if "eager" in modes:
                table_row(name, padded, modes, gpu, args.precision, flops_of[(name, padded)], peak)
    print(f"\n(all of it: {time.perf_counter() - started:.0f} s)", file=out)


def timed_step(
    mode: str,
    model: Seq2SeqTransformer,
    optimizer: torch.optim.Optimizer,
    precision: Precision,
    src: torch.Tensor,
    src_mask: torch.Tensor,
    tgt: torch.Tensor,
) -> Callable[[], None]:
    """One training step of `mode`, with a fresh compiler for the compiled ones."""
    if mode == "eager":
        return partial(training_step, model, optimizer, precision, src, src_mask, tgt)
    torch._dynamo.reset()  # this shape's compile alone, not a recompile of the last entry's
    options = {"mode": "reduce-overhead"} if mode == "graphed" else {}
    forward = torch.compile(model, **options)
    compiled = partial(training_step, forward, optimizer, precision, src, src_mask, tgt)
    if mode == "compiled":
        return compiled

    def graphed() -> None:
        # A new iteration: the graphs' outputs of the last one may be overwritten.
        torch.compiler.cudagraph_mark_step_begin()
        compiled()

    return graphed


def table_row(
    name: str,
    tokens: int,
    seconds_of: dict[str, float],
    gpu: str,
    precision: str,
    flops: float,
    peak: float,
) -> None:
    """`make bench`'s row: eager tokens/s against the fastest other mode's."""
    eager = seconds_of["eager"]
    others = {mode: s for mode, s in seconds_of.items() if mode != "eager"}
    best = min(others, key=others.__getitem__) if others else None
    reference = f"{tokens / others[best]:,.0f} ({best})" if best else "not run"
    ratio = f"{others[best] / eager:.2f}" if best else ""
    print(
        f"| GPU training tokens/s, {name}, eager | {tokens / eager:,.0f} | {reference} | {ratio} "
        f"| {gpu}, {precision}, {tokens:,} tokens a step, MFU {flops / eager / peak:.1%} |"
    )


if __name__ == "__main__":
    main()
