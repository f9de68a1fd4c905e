"""scripts/measure_data_scale.py: the synthetic corpus it builds, and one measured row per size."""

from __future__ import annotations

import gzip
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
SCRIPT = REPO_ROOT / "scripts/measure_data_scale.py"
PAIRS = [
    ("Kyoto is a city.", "京都は都市である。"),
    ("The temple was built in 794.", "寺は794年に建てられた。"),
    ("He wrote a poem.", "彼は歌を詠んだ。"),
]


def load_script():
    spec = importlib.util.spec_from_file_location("measure_data_scale", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_corpus(directory: Path, pairs: list[tuple[str, str]]) -> Path:
    directory.mkdir(parents=True)
    for side, lang in enumerate(("en", "ja")):
        with gzip.open(directory / f"train.{lang}.gz", "wt", encoding="utf-8") as file:
            file.writelines(f"{pair[side]}\n" for pair in pairs)
        for split in ("dev", "test"):
            (directory / f"{split}.{lang}").write_text(f"{pairs[0][side]}\n", encoding="utf-8")
    return directory


def read_pairs(directory: Path) -> list[tuple[str, str]]:
    sides = [
        gzip.decompress((directory / f"train.{lang}.gz").read_bytes()).decode().splitlines()
        for lang in ("en", "ja")
    ]
    return list(zip(*sides, strict=True))


def test_the_synthetic_corpus_repeats_the_pairs_with_each_copy_marked(tmp_path):
    corpus = write_corpus(tmp_path / "kyoto_wiki", PAIRS)
    load_script().write_synthetic(corpus, tmp_path / "synthetic", 8)
    pairs = read_pairs(tmp_path / "synthetic")
    assert len(pairs) == 8 and len(set(pairs)) == 8
    assert pairs[:3] == PAIRS
    assert pairs[3] == ("1 Kyoto is a city.", "1 京都は都市である。")
    assert pairs[7] == ("2 The temple was built in 794.", "2 寺は794年に建てられた。")
    assert (tmp_path / "synthetic/test.ja").read_text(encoding="utf-8") == "京都は都市である。\n"


def test_the_memory_of_a_process_tree_counts_its_children():
    script = load_script()
    alone = script.tree_memory(os.getpid())
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        with_child = max(script.tree_memory(os.getpid()) for _ in range(20))
    finally:
        child.kill()
        child.wait()
    assert min(alone) > 0  # Python's own objects are anonymous; its libraries are mapped files
    assert with_child[0] > alone[0] and with_child[1] > alone[1]


def test_anonymous_memory_is_told_apart_from_mapped_files(tmp_path):
    script = load_script()
    mapped = tmp_path / "mapped.bin"
    mapped.write_bytes(b"\1" * 200_000_000)
    touch = (
        "import mmap, sys, time; f = open(sys.argv[1], 'rb'); "
        "m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ); "
        "sum(m[i] for i in range(0, len(m), 4096)); "
        "a = bytearray(100_000_000); a[::4096] = b'\\1' * len(a[::4096]); "
        "print('ready', flush=True); time.sleep(30)"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", touch, str(mapped)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout.readline().strip() == "ready"
        anonymous, file_backed = script.tree_memory(child.pid)
    finally:
        child.kill()
        child.wait()
    assert 100e6 <= anonymous < 150e6
    assert file_backed >= 200e6


def test_sizes_must_be_positive_pair_counts():
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--sizes", "1000,-5"], capture_output=True, text=True
    )
    assert result.returncode == 2
    assert "pair counts must be positive" in result.stderr.strip().splitlines()[-1]


@pytest.mark.slow
def test_one_row_per_size_through_the_data_stage(tmp_path):
    pairs = [(f"{en} ({n})", f"{ja}（{n}）") for n in range(40) for en, ja in PAIRS]
    corpus = write_corpus(tmp_path / "kyoto_wiki", pairs)
    result = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--sizes",
            "150,300",
            "--corpus",
            str(corpus),
            "--work",
            str(tmp_path / "work"),
        ],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=600,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    header, *rows = result.stdout.strip().splitlines()
    assert header.split()[:2] == ["pairs", "kept"]
    sizes = [int(row.split()[0].replace(",", "")) for row in rows]
    kept = [int(row.split()[1].replace(",", "")) for row in rows]
    assert sizes == [150, 300] and kept == [150, 300]  # no copy was dropped as a duplicate
    assert not (tmp_path / "work").exists()  # removed without --keep
