"""The data stage at corpus scale: tokenizer training plus the tokenized cache, timed and measured.

    DATA_MIRROR=../shared/corpora python scripts/measure_data_scale.py \
        [--sizes 500000,2000000,10000000] [--corpus DIR] [--work DIR] [--keep]

For each size it writes a synthetic corpus built from kyoto_wiki's train split (`--corpus`: a
directory laid out as the mirror's kyoto_wiki/, train gzip-compressed): copies of its
pairs, every copy after the first marked on both sides with its copy number ("3 Kyoto is ...",
"3 京都は..."), so that no copy is a duplicate of another and every size has the sentence lengths
and vocabulary of the real corpus. Then a fresh process runs `experiment=kyoto_wiki`'s data stage
on it (tokenizers sampled from at most `tokenizer.max_sentences` sentences a side, tokenizing on
all cores, the memory-mapped cache) with `paths.root` in the work directory, while this process
samples the resident memory of that process and its workers together. It prints one row per size:
seconds for the tokenizers and for the cache, their sum, that sum per million pairs (equal across
sizes where time grows linearly), the process's wall time (imports included) and the peak
resident memory of the process tree (PSS summed: shared pages once), anonymous (what must fit in
memory) and all of it (with the pages of memory-mapped files, which the kernel can drop).
"""

from __future__ import annotations

import argparse
import gzip
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
SPLIT_FILES = ("dev.en", "dev.ja", "test.en", "test.ja")
SAMPLE_SECONDS = 0.2


def source_corpus(corpus: Path | None) -> Path:
    if corpus is None:
        mirror = os.environ.get("DATA_MIRROR")
        if not mirror:
            sys.exit("measure_data_scale: set DATA_MIRROR to the directory that holds kyoto_wiki/")
        corpus = Path(mirror).expanduser() / "kyoto_wiki"
    if not (corpus / "train.en.gz").is_file():
        sys.exit(f"measure_data_scale: {corpus}/train.en.gz not found")
    return corpus


def read_lines(path: Path) -> list[str]:
    with gzip.open(path, "rt", encoding="utf-8") as file:
        return file.read().splitlines()


def write_synthetic(corpus: Path, target: Path, pairs: int) -> None:
    """`pairs` pairs of copies of `corpus`'s train split, each copy marked, gzip-compressed."""
    target.mkdir(parents=True, exist_ok=True)
    for lang in ("en", "ja"):
        lines = read_lines(corpus / f"train.{lang}.gz")
        with gzip.open(target / f"train.{lang}.gz", "wt", encoding="utf-8", compresslevel=1) as out:
            written = 0
            copy = 0
            while written < pairs:
                chunk = lines[: pairs - written]
                marker = f"{copy} " if copy else ""
                out.write("".join(f"{marker}{line}\n" for line in chunk))
                written += len(chunk)
                copy += 1
    for name in SPLIT_FILES:
        shutil.copyfile(corpus / name, target / name)


def pair_counts(text: str) -> list[int]:
    """`--sizes`: comma-separated positive pair counts."""
    try:
        sizes = [int(size) for size in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of pair counts: {text!r}") from None
    if any(size < 1 for size in sizes):
        raise argparse.ArgumentTypeError(f"pair counts must be positive: {text!r}")
    return sizes


def stage_overrides(work: Path, name: str) -> list[str]:
    return [f"paths.root={work}", "experiment=kyoto_wiki", f"data.name={name}", "data.files=[]"]


def run_stage(work: Path, name: str) -> None:
    """The child: the train program's data stage, timed per part, as one JSON line."""
    from llm_from_scratch.data.datamodule import build_data
    from llm_from_scratch.programs.common import compose_config
    from llm_from_scratch.programs.train import TrainConfig
    from llm_from_scratch.training.tokenizers import load_or_train_tokenizers

    # The stage's own log lines, timed from this process's start like the memory trace's rows.
    logging.basicConfig(level=logging.INFO, format="%(relativeCreated)9.0f ms %(message)s")
    config = compose_config("train", stage_overrides(work, name), TrainConfig)
    started = time.perf_counter()
    src_tok, tgt_tok = load_or_train_tokenizers(config.data, config.tokenizer, config.paths)
    tokenized = time.perf_counter()
    data = build_data(config.data, src_tok, tgt_tok, config.paths)
    cached = time.perf_counter()
    timings = {
        "tokenizers": tokenized - started,
        "cache": cached - tokenized,
        "train_pairs": len(data.splits["train"]),
    }
    print(json.dumps(timings))


def tree_memory(root: int) -> tuple[int, int]:
    """Resident bytes of `root` and every process below it, as (anonymous, file-backed): sums of
    their proportional set sizes (PSS), so that pages forked workers share with their parent count
    once, not per process as summing RSS would. File-backed pages are mapped files (the
    memory-mapped caches, libraries): the kernel drops them under pressure and reads them again,
    while anonymous pages (Python objects, arrays) must fit in memory."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
        except OSError:  # the process ended while being read
            continue
        parent = next(line for line in status.splitlines() if line.startswith("PPid:"))
        children.setdefault(int(parent.split()[1]), []).append(int(entry.name))
    anonymous, file_backed, stack = 0, 0, [root]
    while stack:
        pid = stack.pop()
        sizes = proportional_set_sizes(pid)
        anonymous += sizes.get("Pss_Anon", 0) + sizes.get("Pss_Shmem", 0)
        file_backed += sizes.get("Pss_File", 0)
        stack.extend(children.get(pid, []))
    return anonymous, file_backed


def proportional_set_sizes(pid: int) -> dict[str, int]:
    """The `Pss*` lines of the process's smaps_rollup, in bytes (empty when it has ended)."""
    try:
        rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:  # ended, or not ours to read
        return {}
    fields = (line.split() for line in rollup.splitlines() if line.startswith("Pss"))
    return {name.rstrip(":"): int(kilobytes) * 1024 for name, kilobytes, *_ in fields}


def measure(work: Path, name: str) -> dict[str, float]:
    """The data stage for `name` in a fresh process; its progress bars go to <work>/<name>.log and
    its memory over time to <work>/<name>.memory.tsv (both kept with --keep)."""
    command = [sys.executable, __file__, "--stage", str(work), name]
    log = work / f"{name}.log"
    started = time.perf_counter()
    with log.open("w") as progress:
        child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=progress, text=True)
        peak_anonymous = peak_total = 0
        with (work / f"{name}.memory.tsv").open("w") as trace:
            trace.write("seconds\tanonymous_bytes\tfile_bytes\n")
            while child.poll() is None:
                anonymous, file_backed = tree_memory(child.pid)
                peak_anonymous = max(peak_anonymous, anonymous)
                peak_total = max(peak_total, anonymous + file_backed)
                elapsed = time.perf_counter() - started
                trace.write(f"{elapsed:.1f}\t{anonymous}\t{file_backed}\n")
                time.sleep(SAMPLE_SECONDS)
    seconds = time.perf_counter() - started
    output = child.stdout.read() if child.stdout else ""
    if child.returncode != 0:
        last = log.read_text().strip().splitlines()[-1:] or ["no output"]
        sys.exit(f"measure_data_scale: the data stage for {name} failed: {last[0]}")
    timings = json.loads(output.strip().splitlines()[-1])
    return {
        **timings,
        "process": seconds,
        "peak_anonymous": peak_anonymous,
        "peak_total": peak_total,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=pair_counts, default="500000,2000000,10000000")
    parser.add_argument("--corpus", type=Path, help="default: $DATA_MIRROR/kyoto_wiki")
    parser.add_argument("--work", type=Path, help="scratch directory (default: a temporary one)")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    parser.add_argument("--stage", nargs=2, metavar=("WORK", "NAME"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.stage:
        run_stage(Path(args.stage[0]), args.stage[1])
        return
    corpus = source_corpus(args.corpus)
    work = args.work or Path(tempfile.mkdtemp(prefix="measure_data_scale_"))
    print(
        f"{'pairs':>12} {'kept':>12} {'tokenizers s':>13} {'cache s':>9} {'stage s':>9} "
        f"{'s per 1M':>9} {'process s':>10} {'peak anon GB':>13} {'peak all GB':>12}"
    )
    try:
        for size in args.sizes:
            name = f"scale_{size}"
            write_synthetic(corpus, work / "data" / "raw" / name, size)
            row = measure(work, name)
            stage = row["tokenizers"] + row["cache"]
            print(
                f"{size:>12,} {row['train_pairs']:>12,} {row['tokenizers']:>13.1f} "
                f"{row['cache']:>9.1f} {stage:>9.1f} {stage / size * 1e6:>9.1f} "
                f"{row['process']:>10.1f} {row['peak_anonymous'] / 1e9:>13.2f} "
                f"{row['peak_total'] / 1e9:>12.2f}",
                flush=True,
            )
            for done in (work / "data" / "raw" / name, work / "data" / "cache"):
                shutil.rmtree(done)  # the next size needs the disk
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
