"""Training-step speed of our Transformer against an equal-size `torch.nn.Transformer`.

Both models get the same embeddings (ours: token × √d + sinusoidal positions) and the same tied
output projection, so their parameter counts match exactly; they train on the same batches under
the precision training would pick here (`training.precision=auto`: bf16 autocast where the CPU's
bf16 matrix products beat fp32's, else fp32; `--precision` overrides), timed alternately in this
one process (median of the iterations after a warm-up).
Twice: with dropout (`--dropout`, the paper's 0.1 by default: `model=small` trains without, and
0 would leave nothing to compare), where ours drops out only embeddings and sublayer outputs (the
paper) and nn.Transformer also attention weights and the feed-forward hidden layer; and with
dropout 0, the pure compute; and ours once more with torch's dropout in place of our cheaper CPU
mask (`llm_from_scratch.model.dropout`); and once more with aten's `F.cross_entropy` in place of
our fused CPU loss (`llm_from_scratch.training.loss`); and once more with SDPA's fused attention
kernel in place of the kernel `model.attention.attend` picks. Then, at a second shape
(`--long-shape`, KFTT's sentence lengths by default), ours against ours with SDPA's attention and
nn.Transformer, with that dropout. A step is forward, the trainer's
label-smoothed loss, backward and the trainer's (fused) AdamW update. MFU is
6 · parameters · tokens / time over the peak matrix-multiply rate at that precision, measured here
in the same process (a large GEMM), since a 2-core cloud CPU has no published peak. In an
encoder–decoder a token only passes through its own side, so "parameters · tokens" is counted per
side: encoder weights × source tokens + (decoder weights + output projection) × target tokens;
embedding lookups do no multiplications and are left out. Also prints the parameter count of
every `configs/model/*.yaml`.

    python scripts/bench_model.py [--model small] [--dropout 0.1] [--batch 64] [--src-len 24]
        [--tgt-len 24] [--long-shape 32x60+60] [--precision auto|bf16|fp32] [--table-rows]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from functools import partial
from pathlib import Path

import torch
from omegaconf import OmegaConf
from torch import Tensor, nn
from torch.autograd.profiler_util import FunctionEvent

from llm_from_scratch.model import attention
from llm_from_scratch.model.config import ModelConfig
from llm_from_scratch.model.dropout import PROFILER_RANGE as DROPOUT_RANGE
from llm_from_scratch.model.dropout import Dropout
from llm_from_scratch.model.transformer import Seq2SeqTransformer
from llm_from_scratch.precision import Precision, matmul_rate, select_precision
from llm_from_scratch.tokenizer.config import TokenizerConfig
from llm_from_scratch.training.config import TrainingConfig
from llm_from_scratch.training.loss import PROFILER_RANGE as LOSS_RANGE
from llm_from_scratch.training.loss import aten_cross_entropy, summed_cross_entropy
from llm_from_scratch.training.optim import build_optimizer

# The reference the equivalence tests check ours against, from the checkout (not shipped).
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.reference.transformer import ReferenceSeq2Seq

CONFIG_DIR = Path(__file__).resolve().parents[1] / "configs" / "model"
PAD_ID = 0
BENCH_LOG_HINT = "runs/bench.log"
TRAINING = TrainingConfig()  # the trainer's loss (label smoothing) and optimizer settings
# Our dropout and loss are made of generic operators (random_, mul, exp, ...); their profiler
# ranges tell which part of the step those operators belong to.
PROFILER_RANGES = {DROPOUT_RANGE: "dropout", LOSS_RANGE: "loss"}


def load_config(name: str) -> ModelConfig:
    return ModelConfig(**OmegaConf.to_container(OmegaConf.load(CONFIG_DIR / f"{name}.yaml")))


def training_step(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    precision: Precision,
    src: Tensor,
    src_mask: Tensor,
    tgt: Tensor,
    loss_fn: Callable[[Tensor, Tensor, int, float], Tensor] = summed_cross_entropy,
) -> None:
    with precision.autocast():
        logits = model(src, src_mask, tgt[:, :-1])
    loss = loss_fn(logits, tgt[:, 1:], PAD_ID, TRAINING.label_smoothing)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)


def training_flops(model: Seq2SeqTransformer, src_tokens: int, tgt_tokens: int) -> float:
    """6 FLOPs per weight per token (forward 2, backward 4), each side with its own tokens."""

    def matmul_weights(module: nn.Module, embedding: nn.Module) -> int:
        lookups = {id(p) for p in embedding.parameters()}
        return sum(p.numel() for p in module.parameters() if id(p) not in lookups)

    encoder = matmul_weights(model.encoder, model.encoder.embedding)
    decoder = matmul_weights(model.decoder, model.decoder.embedding)
    return 6 * (encoder * src_tokens + (decoder + model.output_proj.weight.numel()) * tgt_tokens)


def time_alternately(
    steps: dict[str, Callable[[], None]], warmup: int, iterations: int
) -> dict[str, float]:
    """Median seconds per call of each step, interleaved so load changes hit both alike."""
    for _ in range(warmup):
        for step in steps.values():
            step()
    times: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(iterations):
        for name, step in steps.items():
            start = time.perf_counter()
            step()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(seconds) for name, seconds in times.items()}


class TorchDropout(nn.Dropout):
    """torch's dropout with our `Dropout.add`'s interface: the reference for our CPU mask."""

    def add(self, residual: Tensor, x: Tensor) -> Tensor:
        return residual + self(x)


def with_torch_dropout(model: nn.Module) -> nn.Module:
    """`model` with each of our `Dropout` modules replaced by torch's."""
    for parent in list(model.modules()):
        for name, child in parent.named_children():
            if isinstance(child, Dropout):
                setattr(parent, name, TorchDropout(child.p))
    return model


@contextmanager
def fused_attention() -> Iterator[None]:
    """Every attention call takes SDPA's fused kernel, the reference for `attend`'s choice."""
    chosen = dict(attention.CPU_EXPLICIT_MAX_SCORES)
    attention.CPU_EXPLICIT_MAX_SCORES.clear()
    try:
        yield
    finally:
        attention.CPU_EXPLICIT_MAX_SCORES.update(chosen)


def with_fused_attention(step: Callable[[], None]) -> Callable[[], None]:
    def fused_step() -> None:
        with fused_attention():
            step()

    return fused_step


def profile_step(step: Callable[[], None], steps: int) -> list[tuple[str, float]]:
    """Self CPU time per operator over `steps` training steps, as shares of the total, largest
    first (torch.profiler; the first step is a warm-up). Operators that run inside our dropout or
    our loss are named "… (dropout)" or "… (loss)"."""
    step()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profiler:
        for _ in range(steps):
            step()
    self_time: dict[str, float] = {}
    for event in profiler.events():
        part = enclosing_range(event.cpu_parent)
        name = f"{event.name} ({part})" if part else event.name
        self_time[name] = self_time.get(name, 0.0) + event.self_cpu_time_total
    total = sum(self_time.values())
    return sorted(((name, time / total) for name, time in self_time.items()), key=lambda i: -i[1])


def enclosing_range(event: FunctionEvent | None) -> str | None:
    """The part ("dropout", "loss") whose profiler range a profiler event ran within, if any."""
    while event is not None:
        if event.name in PROFILER_RANGES:
            return PROFILER_RANGES[event.name]
        event = event.cpu_parent
    return None


def operator_group(name: str) -> str:
    """The part of a step an operator belongs to."""
    groups = {
        "dropout": ("bernoulli", "dropout"),
        "loss": ("(loss)", LOSS_RANGE, "log_softmax", "nll_loss"),
        "attention": ("scaled_dot_product", "softmax", "masked_fill"),
        "matrix products": ("mm", "addmm", "bmm", "matmul", "linear"),
        "optimizer": ("_foreach", "adamw", "lerp", "addcdiv", "addcmul", "sqrt"),
        "layer norm": ("layer_norm",),
    }
    for group, keys in groups.items():
        if any(key in name for key in keys):
            return group
    return "other"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="small", help="a configs/model/*.yaml name")
    parser.add_argument(
        "--dropout", type=float, default=0.1, help="the dropout of the rows timed with it"
    )
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--src-len", type=int, default=24)
    parser.add_argument("--tgt-len", type=int, default=24)
    parser.add_argument(
        "--vocab",
        type=int,
        default=TokenizerConfig().vocab_size,
        help="source and target vocabulary size (default: the default tokenizer's)",
    )
    parser.add_argument(
        "--long-shape",
        default="32x60+60",
        help="a second shape, BATCHxSRC+TGT (KFTT's lengths by default); 'none' to skip it",
    )
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument(
        "--precision",
        choices=("auto", "bf16", "fp32"),
        default="auto",
        help="auto: what training picks on this CPU (bf16 only where it is native and faster)",
    )
    parser.add_argument("--table-rows", action="store_true", help="print `make bench` rows only")
    args = parser.parse_args()
    details = sys.stderr if args.table_rows else sys.stdout
    precision = select_precision(args.precision, torch.device("cpu"))
    precision_label = "bf16 autocast" if precision.name == "bf16" else precision.name

    print(
        f"Parameters (vocabulary {args.vocab}/{args.vocab}, separate, output tied):\n", file=details
    )
    print("| config | parameters |\n|---|---:|", file=details)
    for name in ("tiny", "small", "base", "big"):
        with torch.device("meta"):  # counts only: no memory, no initialization
            model = Seq2SeqTransformer(load_config(name), args.vocab, args.vocab, PAD_ID)
        print(f"| {name} | {model.num_parameters():,} |", file=details)

    torch.manual_seed(0)
    cfg = replace(load_config(args.model), dropout=args.dropout)
    models: dict[str, nn.Module] = {}
    for dropout in (cfg.dropout, 0.0):
        variant = replace(cfg, dropout=dropout)
        models[f"ours, dropout {dropout}"] = Seq2SeqTransformer(
            variant, args.vocab, args.vocab, PAD_ID
        ).train()
        models[f"nn.Transformer, dropout {dropout}"] = ReferenceSeq2Seq(
            variant, args.vocab, args.vocab
        ).train()
    torch_dropout = f"ours, dropout {cfg.dropout}, torch's dropout"
    if cfg.dropout > 0:
        models[torch_dropout] = with_torch_dropout(
            Seq2SeqTransformer(cfg, args.vocab, args.vocab, PAD_ID).train()
        )
    aten_loss = f"ours, dropout {cfg.dropout}, aten's cross entropy"
    models[aten_loss] = Seq2SeqTransformer(cfg, args.vocab, args.vocab, PAD_ID).train()
    sdpa_attention = f"ours, dropout {cfg.dropout}, SDPA's fused attention"
    models[sdpa_attention] = Seq2SeqTransformer(cfg, args.vocab, args.vocab, PAD_ID).train()
    loss_fns = {name: summed_cross_entropy for name in models} | {aten_loss: aten_cross_entropy}
    counts = {sum(p.numel() for p in model.parameters()) for model in models.values()}
    if len(counts) != 1:
        raise SystemExit(f"parameter counts differ: {sorted(counts)}")
    n_parameters = counts.pop()

    src, src_mask, tgt = random_batch(args.batch, args.src_len, args.tgt_len, args.vocab)
    cpu = torch.device("cpu")
    optimizers = {name: build_optimizer(model, TRAINING, cpu) for name, model in models.items()}
    steps = {
        name: partial(
            training_step, model, optimizers[name], precision, src, src_mask, tgt, loss_fns[name]
        )
        for name, model in models.items()
    }
    steps[sdpa_attention] = with_fused_attention(steps[sdpa_attention])
    seconds = time_alternately(steps, args.warmup, args.iterations)
    tokens = args.batch * (args.src_len + args.tgt_len)
    ours = next(model for model in models.values() if isinstance(model, Seq2SeqTransformer))
    flops = training_flops(ours, args.batch * args.src_len, args.batch * args.tgt_len)
    peak = matmul_rate(precision.dtype or torch.float32, size=2048, repeats=10)
    conditions = (
        f"model={args.model} ({n_parameters:,} parameters each), {precision_label}, batch "
        f"{args.batch} × {args.src_len}+{args.tgt_len} tokens, {torch.get_num_threads()} threads"
    )
    print(
        f"\nTraining step (forward, label-smoothed loss, backward, fused AdamW), {conditions}, "
        f"median of {args.iterations} after {args.warmup} warm-up; "
        f"peak {precision.name} GEMM {peak / 1e9:,.0f} GFLOP/s:\n",
        file=details,
    )
    print("| model | ms / step | tokens / s | MFU |\n|---|---:|---:|---:|", file=details)
    for name, median in seconds.items():
        mfu = flops / median / peak
        print(f"| {name} | {median * 1e3:.1f} | {tokens / median:,.0f} | {mfu:.1%} |", file=details)
    print(file=details)
    for dropout in (cfg.dropout, 0.0):
        ours, theirs = (
            seconds[f"ours, dropout {dropout}"],
            seconds[f"nn.Transformer, dropout {dropout}"],
        )
        print(
            f"speed-up ours / nn.Transformer, dropout {dropout}: {theirs / ours:.2f}×", file=details
        )
        if args.table_rows:
            print(
                f"| training tokens/s, dropout {dropout} | {tokens / ours:,.0f} | "
                f"{tokens / theirs:,.0f} (nn.Transformer) | {theirs / ours:.2f} | {conditions} |"
            )
    if cfg.dropout > 0 and args.table_rows:
        ours, theirs = seconds[f"ours, dropout {cfg.dropout}"], seconds[torch_dropout]
        print(
            f"| training tokens/s, dropout {cfg.dropout}, our CPU dropout | {tokens / ours:,.0f} "
            f"| {tokens / theirs:,.0f} (torch's F.dropout in our model) | {theirs / ours:.2f} "
            f"| {conditions} |"
        )
    if args.table_rows:
        ours, theirs = seconds[f"ours, dropout {cfg.dropout}"], seconds[sdpa_attention]
        print(
            f"| training tokens/s, dropout {cfg.dropout}, our attention kernel | "
            f"{tokens / ours:,.0f} | {tokens / theirs:,.0f} (SDPA's fused attention in our step) "
            f"| {theirs / ours:.2f} | {conditions} |"
        )
        ours, theirs = seconds[f"ours, dropout {cfg.dropout}"], seconds[aten_loss]
        print(
            f"| training tokens/s, dropout {cfg.dropout}, our fused CPU loss | "
            f"{tokens / ours:,.0f} | {tokens / theirs:,.0f} (aten's F.cross_entropy in our step) | "
            f"{theirs / ours:.2f} | {conditions} |"
        )
    ours_name = f"ours, dropout {cfg.dropout}"
    ours_step = partial(
        training_step, models[ours_name], optimizers[ours_name], precision, src, src_mask, tgt
    )
    shares = profile_step(ours_step, steps=3)
    print(
        f"\nOperators of our training step, dropout {cfg.dropout} (self CPU time):\n", file=details
    )
    print("| operator | share |\n|---|---:|", file=details)
    for name, share in shares[:15]:
        print(f"| {name} | {share:.1%} |", file=details)
    by_group: dict[str, float] = {}
    for name, share in shares:
        by_group[operator_group(name)] = by_group.get(operator_group(name), 0.0) + share
    print("\n| part of the step | share |\n|---|---:|", file=details)
    for group, share in sorted(by_group.items(), key=lambda item: -item[1]):
        print(f"| {group} | {share:.1%} |", file=details)
    if args.table_rows:
        parts = ", ".join(
            f"{group} {share:.0%}"
            for group, share in sorted(by_group.items(), key=lambda item: -item[1])
        )
        print(
            f"| training step, time by part (dropout {cfg.dropout}) | {parts} | — | | "
            f"torch.profiler self CPU time, {precision.name}; operators in {BENCH_LOG_HINT} |"
        )
    if args.table_rows:
        mfu = flops / seconds[f"ours, dropout {cfg.dropout}"] / peak
        print(
            f"| training MFU, dropout {cfg.dropout} | {mfu:.1%} "
            f"| {peak / 1e9:,.0f} GFLOP/s (measured {precision.name} GEMM peak) | "
            "| 6 · parameters · tokens per side / time / peak |"
        )
    if args.long_shape != "none":
        bench_long_shape(args, cfg, precision, peak)


def random_batch(batch: int, src_len: int, tgt_len: int, vocab: int) -> tuple[Tensor, ...]:
    """Source lengths vary so that the padding mask matters; targets are one token longer since
    the step shifts them into decoder input and labels."""
    src = torch.randint(1, vocab, (batch, src_len))
    src_lengths = torch.randint(src_len // 2, src_len + 1, (batch,))
    src_mask = torch.arange(src_len)[None, :] < src_lengths[:, None]
    tgt = torch.randint(1, vocab, (batch, tgt_len + 1))
    return src.masked_fill(~src_mask, PAD_ID), src_mask, tgt


def bench_long_shape(
    args: argparse.Namespace, cfg: ModelConfig, precision: Precision, peak: float
) -> None:
    """Ours, ours with SDPA's fused attention and nn.Transformer at `--long-shape`."""
    details = sys.stderr if args.table_rows else sys.stdout
    batch, lengths = args.long_shape.split("x")
    batch, (src_len, tgt_len) = int(batch), map(int, lengths.split("+"))
    torch.manual_seed(0)
    models = {
        "ours": Seq2SeqTransformer(cfg, args.vocab, args.vocab, PAD_ID).train(),
        "ours, SDPA's fused attention": Seq2SeqTransformer(
            cfg, args.vocab, args.vocab, PAD_ID
        ).train(),
        "nn.Transformer": ReferenceSeq2Seq(cfg, args.vocab, args.vocab).train(),
    }
    src, src_mask, tgt = random_batch(batch, src_len, tgt_len, args.vocab)
    cpu = torch.device("cpu")
    steps = {
        name: partial(
            training_step,
            model,
            build_optimizer(model, TRAINING, cpu),
            precision,
            src,
            src_mask,
            tgt,
        )
        for name, model in models.items()
    }
    steps["ours, SDPA's fused attention"] = with_fused_attention(
        steps["ours, SDPA's fused attention"]
    )
    seconds = time_alternately(steps, args.warmup, args.iterations)
    tokens = batch * (src_len + tgt_len)
    flops = training_flops(models["ours"], batch * src_len, batch * tgt_len)
    conditions = (
        f"model={args.model}, {precision.name}, dropout {cfg.dropout}, batch {batch} × "
        f"{src_len}+{tgt_len} tokens, {torch.get_num_threads()} threads"
    )
    print(f"\nTraining step at {conditions}:\n", file=details)
    print("| model | ms / step | tokens / s | MFU |\n|---|---:|---:|---:|", file=details)
    for name, median in seconds.items():
        mfu = flops / median / peak
        print(f"| {name} | {median * 1e3:.1f} | {tokens / median:,.0f} | {mfu:.1%} |", file=details)
    if args.table_rows:
        ours = seconds["ours"]
        for name in ("ours, SDPA's fused attention", "nn.Transformer"):
            print(
                f"| training tokens/s, {src_len}+{tgt_len} tokens | {tokens / ours:,.0f} | "
                f"{tokens / seconds[name]:,.0f} ({name}) | {seconds[name] / ours:.2f} | "
                f"{conditions} |"
            )
        print(
            f"| training MFU, {src_len}+{tgt_len} tokens | {flops / ours / peak:.1%} | "
            f"{peak / 1e9:,.0f} GFLOP/s (measured {precision.name} GEMM peak) | | {conditions} |"
        )


if __name__ == "__main__":
    main()
