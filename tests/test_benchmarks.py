"""Each benchmark runs on tiny settings and prints well-formed `make bench` table rows."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from functools import partial
from pathlib import Path

import pytest
import torch

from llm_from_scratch.model.config import ModelConfig
from llm_from_scratch.model.transformer import Seq2SeqTransformer
from llm_from_scratch.precision import select_precision

REPO_ROOT = Path(__file__).resolve().parents[1]
ROW = re.compile(r"^\| [^|]+ \| [^|]+ \| [^|]+ \|\s*(?:\d+\.\d\d)?\s*\| [^|]+ \|$")

BENCHES = {
    "bench_batching.py": ["experiment=smoke"],
    "bench_recipe.py": [
        "--steps=1",
        "--rounds=1",
        "experiment=smoke",
        "experiment=smoke data.loading.static_shapes=true",
    ],
    "bench_attention.py": ["--lengths", "8", "--tokens", "64", "--iterations", "1"],
    "bench_model.py": [
        "--batch=4",
        "--src-len=8",
        "--tgt-len=8",
        "--long-shape=2x12+12",
        "--iterations=2",
        "--precision=fp32",
    ],
    "bench_decode.py": ["--sentences", "8", "--checkpoint", "{checkpoint}"],
    "bench_ctranslate2.py": ["--sentences", "8", "--checkpoint", "{checkpoint}"],
    "bench_tokenizer.py": ["--limit", "2000", "--vocab-size", "2000"],
    "bench_transformers.py": ["--sentences", "8", "--checkpoint", "{checkpoint}"],
}


@pytest.mark.slow
@pytest.mark.parametrize("script", sorted(BENCHES))
def test_benchmark_prints_table_rows(script, corpus_mirror, tmp_path):
    checkpoint = tmp_path / "none.pt"
    if script in ("bench_decode.py", "bench_ctranslate2.py", "bench_transformers.py"):
        checkpoint = _smoke_checkpoint(tmp_path, corpus_mirror)
    args = [arg.format(checkpoint=checkpoint) for arg in BENCHES[script]]
    result = subprocess.run(
        [sys.executable, f"scripts/{script}", "--table-rows", *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={"DATA_MIRROR": str(corpus_mirror), "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    rows = result.stdout.strip().splitlines()
    assert rows and all(ROW.match(row) for row in rows), result.stdout
    if script == "bench_model.py":  # the rows name the precision they were timed at
        assert all("fp32" in row for row in rows), result.stdout


def test_the_profile_names_the_operators_of_the_dropout_mask_and_of_the_loss():
    spec = importlib.util.spec_from_file_location(
        "bench_model", REPO_ROOT / "scripts/bench_model.py"
    )
    bench_model = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench_model)
    torch.manual_seed(0)
    model = Seq2SeqTransformer(
        ModelConfig(d_model=16, n_heads=2, d_ff=32, dropout=0.1), 50, 50, 0
    ).train()
    optimizer = torch.optim.AdamW(model.parameters())
    precision = select_precision("fp32", torch.device("cpu"))
    src, tgt = torch.randint(1, 50, (2, 5)), torch.randint(1, 50, (2, 6))
    step = partial(bench_model.training_step, model, optimizer, precision, src, src > 0, tgt)
    shares = dict(bench_model.profile_step(step, steps=1))
    assert shares.get("aten::random_ (dropout)", 0.0) > 0.0
    assert shares.get("aten::addcmul (dropout)", 0.0) > 0.0
    assert bench_model.operator_group("aten::addcmul (dropout)") == "dropout"
    assert bench_model.operator_group("aten::addcmul") == "optimizer"
    assert shares.get("aten::exp_ (loss)", 0.0) > 0.0  # the fused loss's backward
    assert shares.get("aten::logsumexp (loss)", 0.0) > 0.0
    assert bench_model.operator_group("aten::exp_ (loss)") == "loss"
    assert sum(shares.values()) == pytest.approx(1.0)


def _smoke_checkpoint(tmp_path: Path, corpus_mirror: Path) -> Path:
    run_dir = tmp_path / "smoke"
    overrides = [
        "experiment=smoke",
        "training.max_steps=2",
        f"paths.run_dir={run_dir}",
        f"paths.raw_dir={tmp_path / 'raw'}",
        f"paths.cache_dir={tmp_path / 'cache'}",
        f"paths.tokenizer_dir={tmp_path / 'tokenizers'}",
    ]
    subprocess.run(
        [sys.executable, "scripts/train.py", *overrides],
        cwd=REPO_ROOT,
        check=True,
        capture_output=True,
        env={"DATA_MIRROR": str(corpus_mirror), "PATH": "/usr/bin:/bin"},
        timeout=600,
    )
    return run_dir / "best.pt"


@pytest.mark.skipif(torch.cuda.is_available(), reason="times the GPU where there is one")
@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA GPU is here")
@pytest.mark.slow
def test_the_gpu_benchmark_skips_make_bench_without_a_gpu_and_refuses_alone():
    script = [sys.executable, "scripts/bench_gpu.py"]
    in_make_bench = subprocess.run(
        [*script, "--table-rows"], cwd=REPO_ROOT, capture_output=True, text=True
    )
    assert in_make_bench.returncode == 0 and in_make_bench.stdout == ""
    assert "no CUDA GPU here" in in_make_bench.stderr
    alone = subprocess.run(script, cwd=REPO_ROOT, capture_output=True, text=True)
    assert alone.returncode == 1
    assert alone.stderr.strip().splitlines()[-1].startswith("bench_gpu: no CUDA GPU here")
