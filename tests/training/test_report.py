"""What training tells its user: stage lines, one line per validation, the final summary."""

from __future__ import annotations

import logging
import re
import subprocess
import sys
from pathlib import Path

import pytest

from llm_from_scratch.checkpoint import load_checkpoint
from llm_from_scratch.data.config import DataConfig
from llm_from_scratch.paths import PathsConfig
from llm_from_scratch.programs.train import summary, translate_command
from llm_from_scratch.training.report import FinalModel, format_elapsed, validation_line

from .commands import copy_task_overrides
from .test_trainer import Run, fp32
from .test_validation import two_corpora

REPO_ROOT = Path(__file__).resolve().parents[2]
VALIDATION = re.compile(
    r"step (\d+)/(\d+) \| dev loss \d+\.\d\d \| BLEU (\d+\.\d) \| chrF \d+\.\d \| "
    r"best (\d+\.\d) \(step (\d+)\) \| (\d+m)?\d+s$"
)


@pytest.mark.parametrize(
    ("seconds", "text"), [(0.4, "0s"), (59.9, "59s"), (754, "12m34s"), (7509, "2h05m09s")]
)
def test_elapsed_times(seconds, text):
    assert format_elapsed(seconds) == text


def test_the_validation_line_reads_like_joeynmt_and_fairseq():
    metrics = {"loss": 2.3149, "perplexity": 10.1, "bleu": 24.14, "chrf": 30.18}
    line = validation_line(1500, 4200, metrics, best_bleu=24.14, best_step=1500, elapsed=754)
    assert line == (
        "step 1500/4200 | dev loss 2.31 | BLEU 24.1 | chrF 30.2 | best 24.1 (step 1500) | 12m34s"
    )


def test_with_several_corpora_the_line_gives_each_ones_scores_after_the_overall():
    metrics = {
        "loss": 2.3149,
        "perplexity": 10.1,
        "bleu": 25.14,
        "chrf": 30.18,
        "small_parallel_enja/bleu": 31.23,
        "small_parallel_enja/chrf": 36.0,
        "tanaka_graded/bleu": 19.04,
        "tanaka_graded/chrf": 24.4,
    }
    line = validation_line(1500, 4200, metrics, best_bleu=25.14, best_step=1500, elapsed=754)
    assert line == (
        "step 1500/4200 | dev loss 2.31 | BLEU 25.1 (small_parallel_enja 31.2, tanaka_graded 19.0)"
        " | chrF 30.2 (small_parallel_enja 36.0, tanaka_graded 24.4) | best 25.1 (step 1500) | "
        "12m34s"
    )


@pytest.fixture
def train_log(tmp_path):
    """A file handler on the root logger, as Hydra's `train.log` is."""
    path = tmp_path / "train.log"
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(name)s - %(message)s"))
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    yield path
    root.removeHandler(handler)
    root.setLevel(level)
    handler.close()


@pytest.mark.slow
def test_one_line_per_validation_then_the_final_model_in_the_log(
    copy_task, tmp_path, train_log, capsys
):
    config, data, _ = copy_task
    settings = {"eval_every": 10, "save_every": 10, "keep_snapshots": 2, "warmup_steps": 5}
    config = fp32(config, tmp_path / "run", max_steps=30, dev_bleu_sentences=8, **settings)
    handlers = list(logging.getLogger().handlers)
    trainer = Run(config, data)
    trainer.fit()
    assert logging.getLogger().handlers == handlers  # the console goes back as it was

    lines = train_log.read_text(encoding="utf-8").splitlines()
    validations = [match for line in lines if (match := VALIDATION.search(line))]
    assert [(int(m[1]), int(m[2])) for m in validations] == [(10, 30), (20, 30), (30, 30)]
    bleu_so_far: list[float] = []
    for match in validations:
        bleu_so_far.append(float(match[3]))
        best = max(bleu_so_far)
        assert float(match[4]) == best
        assert int(validations[bleu_so_far.index(best)][1]) == int(match[5])

    final = trainer.final
    assert final is not None and final.path == tmp_path / "run" / "averaged.pt"
    assert final.test is not None and final.test_sentences == len(data.splits["test"]) == 60
    assert set(final.dev) >= {"loss", "bleu", "chrf"}
    last_validation = max(i for i, line in enumerate(lines) if VALIDATION.search(line))
    after = lines[last_validation + 1 :]
    assert any(line.endswith("averaging the last 2 snapshots into averaged.pt") for line in after)
    assert any(line.endswith("translating the test split (60 sentences, greedy)") for line in after)
    # While it validates, the bar says so instead of standing still.
    assert "validating (8 dev sentences)" in capsys.readouterr().err


@pytest.mark.slow
def test_without_snapshots_the_final_model_is_best_pt_with_its_dev_scores(copy_task, tmp_path):
    config, data, _ = copy_task
    settings = {"eval_every": 10, "save_every": 10, "keep_snapshots": 0, "warmup_steps": 5}
    trainer = Run(fp32(config, tmp_path, max_steps=20, dev_bleu_sentences=8, **settings), data)
    trainer.fit()
    final = trainer.final
    best = load_checkpoint(tmp_path / "best.pt")
    assert final is not None and final.path == tmp_path / "best.pt"
    assert final.dev == best["metrics"]
    assert final.description == f"the best dev BLEU, step {best['progress']['step']}"
    assert not (tmp_path / "averaged.pt").exists()


def test_a_run_on_several_corpora_logs_and_keeps_each_ones_scores(copy_task, tmp_path, train_log):
    config, data, _ = copy_task
    settings = {"eval_every": 10, "save_every": 10, "keep_snapshots": 0, "warmup_steps": 5}
    run = Run(
        fp32(config, tmp_path, max_steps=10, dev_bleu_sentences=8, **settings), two_corpora(data)
    )
    run.fit()
    line = next(
        line for line in train_log.read_text(encoding="utf-8").splitlines() if "step 10/10" in line
    )
    assert re.search(
        r"dev loss \d+\.\d\d \| BLEU \d+\.\d \(copy_a \d+\.\d, copy_b \d+\.\d\) \| "
        r"chrF \d+\.\d \(copy_a \d+\.\d, copy_b \d+\.\d\) \| best",
        line,
    ), line
    final = run.final
    corpus_keys = {"copy_a/bleu", "copy_a/chrf", "copy_b/bleu", "copy_b/chrf"}
    assert final is not None and final.test is not None
    assert set(final.test) == {"bleu", "chrf", *corpus_keys}
    assert set(final.dev) == {"loss", "perplexity", "bleu", "chrf", *corpus_keys}
    best = load_checkpoint(tmp_path / "best.pt")["metrics"]
    assert final.dev == best
    assert run.progress.best_bleu == best["bleu"]  # the overall dev BLEU picks the best


def test_the_summary_names_the_model_its_scores_and_the_command(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    runs = tmp_path / "runs"
    final = FinalModel(
        path=runs / "default" / "averaged.pt",
        description="the average of the last 5 snapshots",
        dev={"loss": 2.0, "bleu": 30.04, "chrf": 35.0},
        test={"bleu": 29.06, "chrf": 34.0},
        test_sentences=500,
    )

    class Config:
        name = "default"
        paths = PathsConfig(runs_dir=str(runs), run_dir=str(runs / "default"))
        data = DataConfig(source="local")

    lines = summary(final, Config(), seconds=1805)
    assert lines[0] == (
        "finished in 30m05s; the model: runs/default/averaged.pt "
        "(the average of the last 5 snapshots)"
    )
    assert lines[1:3] == [
        "dev loss 2.00 | BLEU 30.0 | chrF 35.0 (greedy)",
        "test BLEU 29.1 | chrF 34.0 (greedy, 500 sentences)",
    ]
    assert lines[3].startswith("translate with: ")
    assert lines[3].endswith('scripts/translate.py --run default "Hello."')
    mixed_test = {**final.test, "a/bleu": 35.0, "a/chrf": 40.0, "b/bleu": 20.0, "b/chrf": 25.0}
    mixed = summary(FinalModel(final.path, "", final.dev, mixed_test, 500), Config(), 1)
    assert (
        mixed[2]
        == "test BLEU 29.1 (a 35.0, b 20.0) | chrF 34.0 (a 40.0, b 25.0) (greedy, 500 sentences)"
    )
    no_test = summary(FinalModel(final.path, "", final.dev, None, 0), Config(), 1)
    assert no_test[2] == "test: no test pairs"


def test_a_run_outside_runs_dir_is_translated_by_its_checkpoint(tmp_path):
    class Config:
        name = "smoke"
        paths = PathsConfig(runs_dir=str(tmp_path / "runs"), run_dir=str(tmp_path / "elsewhere"))
        data = DataConfig(source="local")

    model = tmp_path / "elsewhere" / "best.pt"
    command = translate_command(Config(), model)
    assert command.endswith(f'scripts/translate.py --checkpoint {model} "Hello."')
    Config.data = DataConfig(
        source="local", direction="ja-en"
    )  # the example is in the language the model reads
    assert translate_command(Config(), model).endswith(f'--checkpoint {model} "こんにちは。"')


@pytest.mark.slow
def test_train_log_of_a_run_tells_every_stage(copy_corpus, tmp_path):
    """`scripts/train.py` as a user runs it: Hydra's train.log holds the stages before the
    first step, one line per validation, and the summary; the terminal shows the same lines."""
    run_dir = tmp_path / "run"
    overrides = [
        *copy_task_overrides(copy_corpus, tmp_path, run_dir),
        "training.precision=fp32",
        "training.max_steps=4",
        "training.warmup_steps=1",
        "training.eval_every=2",
        "training.save_every=2",
    ]
    result = subprocess.run(
        [sys.executable, "scripts/train.py", *overrides],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    log = (run_dir / "train.log").read_text(encoding="utf-8")
    messages = [line.split("] - ", 1)[1] for line in log.splitlines() if "] - " in line]
    expected_in_order = [
        r"data ready: .*copy \(\d+\.\d s\)",
        r"training the en tokenizer: BPE, 320 pieces$",
        r"trained the en tokenizer on 3,000 sentences in \d+\.\d s: .*copy\.en\.bpe320\.\w+\.json",
        r"training the ja tokenizer: BPE, 320 pieces$",
        r"tokenizers ready: .*copy\.en\.bpe320\.\w+\.json, .*copy\.ja\.bpe320\.\w+\.json",
        r"tokenizing and cleaning copy \(train 3,000, dev 60, test 60 pairs\)",
        r"tokenized splits ready: train 3,000, dev 60, test 60 pairs \(\d+\.\d s\)",
        r"model: [\d,]+ parameters",
        r"step 2/4 \| dev loss",
        r"step 4/4 \| dev loss",
        r"averaged\.pt \| dev loss",
        r"translating the test split \(60 sentences, greedy\)",
        r"finished in (\d+m)?\d+s; the model: .*averaged\.pt \(the average of the last 2 ",
        r"dev loss \d+\.\d\d \| BLEU \d+\.\d \| chrF \d+\.\d \(greedy\)",
        r"test BLEU \d+\.\d \| chrF \d+\.\d \(greedy, 60 sentences\)",
        rf'translate with: .*scripts/translate\.py --checkpoint {run_dir}/averaged\.pt "Hello\."',
    ]
    position = 0
    for pattern in expected_in_order:
        found = next(
            (i for i in range(position, len(messages)) if re.match(pattern, messages[i])), None
        )
        assert found is not None, f"{pattern!r} not found in order in:\n{log}"
        position = found + 1
    assert sum(bool(VALIDATION.search(message)) for message in messages) == 2
    # The terminal shows the same lines, prefixed by the time only.
    assert re.search(r"^\d\d:\d\d:\d\d step 4/4 \| dev loss", result.stdout, re.M)
