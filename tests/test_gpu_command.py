"""The one command of a GPU lease, `scripts/gpu_run.sh`, dry-run on a CPU (`GPU_RUN_DRY=1`: a tiny
model, a few steps, a tiny corpus): every step a lease runs (the data stage, the benchmark, the
training planned to fit the time left, the beam-5 decoding, the results and the timeline in
$OUT), from an empty work folder as a lease's, so the script cannot rot between leases, which
are rare. What only a GPU shows (speed, compile, CUDA graphs) stays for the lease."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
GPU_RUN = REPO_ROOT / "scripts" / "gpu_run.sh"
TIMELINE = REPO_ROOT / "scripts" / "gpu_timeline.py"

# Raw (unsegmented) Japanese, as kyoto_wiki's: a few words in many combinations.
SUBJECTS = [("I", "私"), ("He", "彼"), ("She", "彼女"), ("The monk", "僧")]
PLACES = [("Kyoto", "京都"), ("Nara", "奈良"), ("the temple", "寺"), ("the shrine", "神社")]


def write_corpus(directory: Path) -> None:
    """A parallel corpus in configs/data/local_parallel.yaml's layout: train, dev, test."""
    pairs = [
        (f"{en} went to {place_en}.", f"{ja}は{place_ja}へ行った。")
        for en, ja in SUBJECTS
        for place_en, place_ja in PLACES
    ]
    splits = {"train": pairs, "dev": pairs[:4], "test": pairs[4:10]}
    directory.mkdir(parents=True)
    for split, rows in splits.items():
        for index, lang in enumerate(("en", "ja")):
            text = "".join(row[index] + "\n" for row in rows)
            (directory / f"{split}.{lang}").write_text(text, encoding="utf-8")


def gpu_run(tmp_path: Path, *arguments: str, **env: str) -> subprocess.CompletedProcess:
    environment = {
        "PATH": os.environ["PATH"],
        "HOME": os.environ.get("HOME", str(tmp_path)),
        "PY": sys.executable,
        "OUT": str(tmp_path / "out"),
        "GPU_CARRY": str(tmp_path / "carry"),
        "GPU_RUN_WORK": str(tmp_path / "work"),
        "OMP_NUM_THREADS": "1",
        **env,
    }
    return subprocess.run(
        ["bash", str(GPU_RUN), *arguments],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=240,
        env=environment,
    )


@pytest.mark.slow  # trains, decodes and scores: the longest of the suite's runs
def test_the_dry_run_trains_decodes_scores_and_leaves_every_result_in_out(tmp_path):
    write_corpus(tmp_path / "carry" / "corpora" / "tiny_lease")
    assert not (tmp_path / "work").exists()  # a lease's machine starts bare
    done = gpu_run(
        tmp_path,
        GPU_RUN_DRY="1",
        GPU_DATA="local_parallel",
        GPU_RUN_ARGS="data.name=tiny_lease",
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    out = tmp_path / "out"
    names = {path.name for path in out.iterdir()}
    assert {"gpu_run.log", "bench.md", "train.log", "hypotheses.txt", "metrics.json"} <= names
    assert "timeline.txt" in names
    assert len(names) <= 8  # what comes back from a lease
    bench = (out / "bench.md").read_text(encoding="utf-8")
    assert "| tiny | 240 | eager |" in bench
    metrics = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    assert metrics["decoding"]["beam_size"] == 5
    assert metrics["sentences"] == 6 and "ja-mecab" in metrics["bleu_signature"]
    assert 0 <= metrics["chrf"] <= 100
    hypotheses = (out / "hypotheses.txt").read_text(encoding="utf-8").splitlines()
    assert len(hypotheses) == 6
    timeline = (out / "timeline.txt").read_text(encoding="utf-8").splitlines()
    stages = [line.split(maxsplit=1)[1] for line in timeline[1:]]
    order = ["start", "setup done", "data done", "benchmark done", "train start",
             "log: timed on a stand-in of the corpus", "first logged update",
             "last logged update", "train end", "decode start", "decode end", "end"]  # fmt: skip
    found = [next(i for i, stage in enumerate(stages) if stage.startswith(o)) for o in order]
    assert found == sorted(found), timeline
    seconds = [float(line.split()[0]) for line in timeline[1:]]
    assert seconds == sorted(seconds) and seconds[0] == 0.0
    assert "log: tokenized splits ready" in "\n".join(stages)
    # The time budget planned the run: the planner's path, as on a lease.
    plan = r"at [\d.]+k tokens/s: rung \d+ of \d+ \(\w+\), 4 steps"
    assert re.search(plan, (out / "train.log").read_text(encoding="utf-8"))


@pytest.mark.slow  # a process that imports torch: seconds each
def test_a_budget_that_is_no_duration_is_refused_in_one_line(tmp_path):
    (tmp_path / "carry" / "corpora").mkdir(parents=True)
    done = gpu_run(tmp_path, "ten minutes", GPU_RUN_DRY="1")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "gpu_run: BUDGET='ten minutes' is not a duration: write e.g. 1800, 30m, 1h or 1h30m"
    ]


def test_without_the_prepared_folder_the_run_says_what_to_do(tmp_path):
    done = gpu_run(tmp_path, "9m30s")
    assert done.returncode != 0
    assert "scripts/gpu_prepare.sh" in done.stderr.strip().splitlines()[-1]


def test_prepare_refuses_without_a_corpus_mirror(tmp_path):
    environment = {"PATH": os.environ["PATH"], "PY": sys.executable}
    done = subprocess.run(
        ["bash", str(REPO_ROOT / "scripts" / "gpu_prepare.sh")],
        capture_output=True,
        text=True,
        timeout=60,
        env=environment,
    )
    assert done.returncode == 1
    assert done.stderr.strip() == (
        "gpu_prepare: set DATA_MIRROR to the directory that holds kyoto_wiki/"
    )


def test_the_timeline_orders_marks_log_lines_and_updates_from_the_start(tmp_path):
    marks = tmp_path / "marks"
    marks.write_text("start\t1000.0\ntrain start\t1010.5\nend\t1100.0\n", encoding="utf-8")
    log = tmp_path / "train.log"
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(1020))
    log.write_text(
        f"[{stamp},300][llm_from_scratch.programs.train][INFO] - data ready: x (0.1 s)\n"
        "a line of no record\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, str(TIMELINE), str(marks), "--log", str(log)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.splitlines() == [
        "timeline (seconds from the command's start):",
        "     0.0  start",
        "    10.5  train start",
        "    20.3  log: data ready: x (0.1 s)",
        "   100.0  end",
    ]


@pytest.mark.slow  # a process that imports torch: seconds each
@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--device", "cpu", "--modes", "graphed"], "a CUDA device only"),
        (["--device", "cpu", "--modes", "fast"], "'fast' is not one of eager, compiled, graphed"),
        (["--device", "cpu", "--tokens", "10"], "each at least one pair's 60"),
    ],
)
def test_the_benchmark_refuses_what_it_cannot_time(arguments, message):
    done = subprocess.run(
        [sys.executable, "scripts/bench_gpu.py", *arguments],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    assert message in done.stderr.strip().splitlines()[-1]
