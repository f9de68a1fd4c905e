"""What training tells its user: the progress bar, one line per validation, the final model.

Log records go to the terminal above the bar (through `tqdm.write`) and, under Hydra, to
`<run_dir>/train.log` as well, so the file holds the same validation lines as the terminal.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from llm_from_scratch.model.transformer import Seq2SeqTransformer
from llm_from_scratch.precision import Precision
from llm_from_scratch.training.config import TrainConfig
from llm_from_scratch.training.plan import Plan
from llm_from_scratch.training.validation import corpus_figures


def format_elapsed(seconds: float) -> str:
    """`45s`, `12m34s`, `2h05m09s`."""
    whole = int(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m{secs:02d}s"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{secs}s"


def scores_text(metrics: dict[str, float]) -> str:
    """`loss 2.31 | BLEU 24.1 | chrF 30.2`, of the metrics present; with several corpora, each
    one's after the overall figure: `BLEU 24.1 (small_parallel_enja 31.2, tanaka_graded 19.0)`."""
    parts = []
    if "loss" in metrics:
        parts.append(f"loss {metrics['loss']:.2f}")
    for name, label in (("bleu", "BLEU"), ("chrf", "chrF")):
        part = f"{label} {metrics[name]:.1f}"
        corpora = corpus_figures(metrics, name)
        if corpora:
            part += " (" + ", ".join(f"{c} {value:.1f}" for c, value in corpora.items()) + ")"
        parts.append(part)
    return " | ".join(parts)


def validation_line(
    step: int,
    total_steps: int,
    metrics: dict[str, float],
    best_bleu: float,
    best_step: int,
    elapsed: float,
) -> str:
    """`step 1500/4200 | dev loss 2.31 | BLEU 24.1 | chrF 30.2 | best 24.1 (step 1500) | 12m34s`;
    the best is the overall dev BLEU's."""
    return (
        f"step {step}/{total_steps} | dev {scores_text(metrics)} | "
        f"best {best_bleu:.1f} (step {best_step}) | {format_elapsed(elapsed)}"
    )


@dataclass
class FinalModel:
    """The model a run hands over, and its scores (greedy decoding, like every validation)."""

    path: Path
    description: str  # e.g. "the average of the last 5 snapshots"
    dev: dict[str, float]
    test: dict[str, float] | None  # None: the data has no test pairs
    test_sentences: int


class TrainingBar:
    """The step bar. Until `close()`, console log lines are written above it (through
    `tqdm.write`) instead of through it."""

    def __init__(self, total: int, initial: int, enabled: bool) -> None:
        self.bar = tqdm(
            total=total, initial=initial, disable=not enabled, unit="step", dynamic_ncols=True
        )
        self._restore_handlers = _write_console_logs_above_bars() if enabled else None

    def close(self) -> None:
        self.bar.close()
        if self._restore_handlers is not None:
            self._restore_handlers()

    def advance(self) -> None:
        self.bar.update(1)

    def set_total(self, steps: int) -> None:
        """The run's steps, planned again."""
        self.bar.total = steps
        self.bar.refresh()

    def show_training(self, loss: float, tokens_per_second: float) -> None:
        self.bar.set_postfix(loss=f"{loss:.3f}", tok_s=f"{tokens_per_second:,.0f}")

    @contextmanager
    def validating(self, sentences: int) -> Iterator[None]:
        """Say what the bar is waiting for while a validation runs."""
        self.bar.set_description_str(f"validating ({sentences} dev sentences)", refresh=True)
        try:
            yield
        finally:
            self.bar.set_description_str("", refresh=True)


def _is_console(handler: logging.Handler) -> bool:
    stream = getattr(handler, "stream", None)
    return isinstance(handler, logging.StreamHandler) and stream in (sys.stdout, sys.stderr)


class _AboveTheBar(logging.StreamHandler):
    """A console handler that clears the bar, writes the line, and redraws the bar."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            tqdm.write(self.format(record), file=self.stream)
        except Exception:
            self.handleError(record)


def _write_console_logs_above_bars() -> Callable[[], None]:
    """Swap the root logger's console handlers (Hydra's, or basicConfig's) for ones that write
    through `tqdm.write`; file handlers (`train.log`) stay. Returns what puts them back."""
    root = logging.getLogger()
    original = root.handlers
    replaced = []
    for handler in original:
        if _is_console(handler):
            above = _AboveTheBar(handler.stream)
            above.setLevel(handler.level)
            above.setFormatter(handler.formatter)
            for log_filter in handler.filters:
                above.addFilter(log_filter)
            handler = above
        replaced.append(handler)
    root.handlers = replaced

    def restore() -> None:
        root.handlers = original

    return restore


class ConsoleFormatter(logging.Formatter):
    """`12:34:56 message` for information, `12:34:56 WARNING message` otherwise: the terminal
    shows what happens; `train.log` keeps the logger names (configs/train.yaml sets both)."""

    def __init__(self) -> None:
        super().__init__(datefmt="%H:%M:%S")

    def format(self, record: logging.LogRecord) -> str:
        level = "" if record.levelno == logging.INFO else f"{record.levelname} "
        return f"{self.formatTime(record, self.datefmt)} {level}{super().format(record)}"


def model_line(model: Seq2SeqTransformer, precision: Precision, run_dir: Path) -> str:
    """The log line of the model a run trains, and where."""
    return (
        f"model: {model.num_parameters():,} parameters ({model.cfg.n_encoder_layers} encoder and "
        f"{model.cfg.n_decoder_layers} decoder layers); device {precision.device}, precision "
        f"{precision.name}; run directory {run_dir}"
    )


def hparams(config: TrainConfig, plan: Plan, model: Seq2SeqTransformer, precision: str) -> dict:
    """What TensorBoard's hparams table shows of a run."""
    return {
        "model.d_model": config.model.d_model,
        "model.layers": model.cfg.n_encoder_layers + model.cfg.n_decoder_layers,
        "tokenizer.vocab_size": config.tokenizer.vocab_size,
        "training.lr": plan.lr,
        "training.label_smoothing": config.training.label_smoothing,
        "data.loading.batch_tokens": plan.batch_tokens,
        "precision": precision,
    }
