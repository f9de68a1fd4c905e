"""scripts/evaluate.py end to end on a few test sentences, and the scores it reports."""

from __future__ import annotations

import errno
import json
import os
import re
from pathlib import Path

import pytest

from llm_from_scratch.atomic import DiskFullError
from llm_from_scratch.data import corpus
from llm_from_scratch.data.corpus import CORPUS_COLUMN
from llm_from_scratch.errors import ConfigError
from llm_from_scratch.evaluation.metrics import corpus_scores
from llm_from_scratch.programs import evaluate as evaluate_cli
from llm_from_scratch.programs.arguments import UsageError
from llm_from_scratch.programs.model_choice import decoding_overrides
from llm_from_scratch.tokenizer.bpe import BPETokenizer
from tests.decoding.builders import save_tiny_checkpoint


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    tok = BPETokenizer.train(["the cat sat on the mat.", "猫がマットに座った。"], vocab_size=300)
    return save_tiny_checkpoint(tmp_path_factory.mktemp("run") / "best.pt", tok)


@pytest.mark.parametrize(
    ("args", "error", "message"),
    [
        (["nonsense=1"], UsageError, "'nonsense=1' is not decoding.KEY=VALUE or data.KEY=VALUE"),
        (["decoding=fast"], ConfigError, "decoding=fast is no preset; they are beam, greedy"),
        (["decoding.beam=2"], ConfigError, "decoding.beam is not a decoding setting"),
        (["paths.raw=x"], ConfigError, "paths.raw is not a paths setting; did you mean paths.raw_"),
        (["data.mirror=x"], UsageError, "data.mirror=x sets a key of --data NAME's config"),
        (["--data", "nope"], ConfigError, "nope"),
        (["--data", "../../../etc/passwd"], ConfigError, "--data ../../../etc/passwd leads outsi"),
        (["--data", "/etc/passwd"], ConfigError, "--data /etc/passwd leads outside"),
        (["--engine", "ctranslate2", "--ensemble", "b"], UsageError, "not an ensemble"),
    ],
)
def test_bad_settings_are_refused_before_the_model_loads(args, error, message):
    # --checkpoint names no file: reaching the model would raise a CheckpointError instead.
    with pytest.raises(error, match=re.escape(message)):
        evaluate_cli.main([*args, "--checkpoint", "/nonexistent/model.pt"])


def test_flags_and_settings_are_read_as_given():
    odd_path = "runs/it's a, b=c\\.pt"  # quotes, spaces, commas, = and a backslash survive
    args, settings = evaluate_cli.parse_args(
        ["--checkpoint", odd_path, "--ensemble", "b.pt", "--ensemble", "c d.pt", "--beam", "2",
         "--split", "dev", "--limit", "7", "--output-dir", "out dir", "--device", "cpu",
         "decoding=greedy", "decoding.length_penalty=1.4", "paths.root=/r"]
    )  # fmt: skip
    assert (args.checkpoint, args.ensemble) == (odd_path, ["b.pt", "c d.pt"])
    assert (args.split, args.limit, args.output_dir, args.device) == ("dev", 7, "out dir", "cpu")
    assert settings == {
        "decoding": "greedy", "decoding.length_penalty": "1.4", "paths.root": "/r"
    }  # fmt: skip
    overrides = decoding_overrides(args, settings)
    assert (overrides["beam_size"], overrides["length_penalty"]) == (2, "1.4")  # over the preset
    assert overrides["no_repeat_ngram_size"] == 3  # the preset's
    assert evaluate_cli.paths_config(settings).raw_dir == "/r/data/raw"
    assert evaluate_cli.parse_args([])[0].run == "default"
    assert evaluate_cli.parse_args(["--run", "smoke"])[0].run == "smoke"


@pytest.mark.parametrize(
    "args,message",
    [
        (["checkpoint=a.pt"], "write `--checkpoint a.pt`, not `checkpoint=a.pt`"),
        (["split=dev"], "write `--split dev`, not `split=dev`"),
        (["data=kftt"], "write `--data kftt`, not `data=kftt`"),
        (["ensemble=[a.pt]"], "write `--ensemble [a.pt]`"),
        (["--decoding.length_penalty=2"], "write `decoding.length_penalty=2` without the dashes"),
        (["--output_dir=x"], "unknown option --output_dir=x: the flag is --output-dir"),
        (["--split", "train2"], "argument --split: invalid choice: 'train2'"),
        (["--cfg", "job"], "unknown option --cfg: see evaluate.py --help"),
    ],
)
def test_the_other_spelling_is_refused_with_the_right_one(args, message):
    with pytest.raises(UsageError) as error:
        evaluate_cli.main(args)
    assert message in str(error.value)


def test_help_lists_the_flags_and_the_settings(capsys):
    with pytest.raises(SystemExit) as exit_status:
        evaluate_cli.main(["--help"])
    assert exit_status.value.code == 0
    help_text = capsys.readouterr().out
    for flag in ("--run", "--checkpoint", "--ensemble", "--beam", "--split", "--output-dir"):
        assert flag in help_text
    for key in ("decoding=PRESET", "decoding.KEY=VALUE", "data.mirror=DIR", "paths.runs_dir"):
        assert key in help_text


def test_a_full_disk_leaves_no_empty_evaluation_folder(
    checkpoint, corpus_mirror, tmp_path, monkeypatch
):
    run = tmp_path / "run"
    run.mkdir()
    (run / "best.pt").write_bytes(checkpoint.read_bytes())

    fsync = os.fsync

    def full_in_the_run(fd: int) -> None:  # each file's last write before it is in place
        if os.readlink(f"/proc/self/fd/{fd}").startswith(str(run)):
            raise OSError(errno.ENOSPC, "No space left on device")
        fsync(fd)

    monkeypatch.setattr(os, "fsync", full_in_the_run)
    with pytest.raises(DiskFullError):
        evaluate_cli.main(
            [
                "--checkpoint",
                str(run / "best.pt"),
                "decoding=greedy",
                "--limit",
                "2",
                "--data",
                "small_parallel_enja",
                f"data.mirror={corpus_mirror}",
                f"paths.raw_dir={tmp_path / 'raw'}",
                f"paths.cache_dir={tmp_path / 'cache'}",
            ]
        )
    assert sorted(path.name for path in run.iterdir()) == ["best.pt"]


@pytest.mark.parametrize("detokenize", [True, False])
def test_evaluate_writes_hypotheses_and_metrics(
    checkpoint, corpus_mirror, tmp_path, capsys, detokenize
):
    out = tmp_path / "out"
    status = evaluate_cli.main(
        [
            "--checkpoint",
            str(checkpoint),
            "--split",
            "test",
            "decoding=greedy",
            "--limit",
            "12",
            "--output-dir",
            str(out),
            "--data",
            "small_parallel_enja",
            f"data.mirror={corpus_mirror}",
            f"paths.raw_dir={tmp_path / 'raw'}",
            f"paths.cache_dir={tmp_path / 'cache'}",
            f"data.corpus.detokenize_ja={str(detokenize).lower()}",
        ]
    )
    assert status == 0
    assert len((out / "hypotheses.txt").read_text(encoding="utf-8").split("\n")) == 13
    metrics = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    assert metrics["sentences"] == 12
    assert metrics["decoding"]["beam_size"] == 1
    assert 0.0 <= metrics["bleu"] <= 100.0
    assert "tok:ja-mecab" in metrics["bleu_signature"]
    assert sum(b["sentences"] for b in metrics["bleu_by_source_length"].values()) == 12
    assert 0 <= metrics["hit_max_len"] <= 12
    assert metrics["sentences_per_second"] > 0
    assert ("bleu_segmented" in metrics) == (not detokenize)
    captured = capsys.readouterr()
    assert "tok:ja-mecab" in captured.out
    assert captured.err == f"model: {checkpoint.resolve()} (step not recorded)\n"


def greedy_on_small_parallel_enja(
    checkpoint: Path, corpus_mirror: Path, tmp_path: Path, limit: int
) -> list[str]:
    """evaluate's arguments: greedy search of `checkpoint` on the mirror's small_parallel_enja
    test split, its first `limit` sentences, with the caches under `tmp_path`."""
    return [
        "--checkpoint",
        str(checkpoint),
        "--beam",
        "1",
        "--limit",
        str(limit),
        "--data",
        "small_parallel_enja",
        f"data.mirror={corpus_mirror}",
        f"paths.raw_dir={tmp_path / 'raw'}",
        f"paths.cache_dir={tmp_path / 'cache'}",
        # A briefly trained model runs to the length limit: a short one keeps the tests quick.
        "decoding.max_len_a=1",
        "decoding.max_len_b=1",
    ]


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ([], {"beam_size": 1, "length_penalty": 0.7, "max_len_b": 3}),  # the run's own
        (["decoding.max_len_b=4"], {"beam_size": 1, "length_penalty": 0.7, "max_len_b": 4}),
        (["--beam", "2"], {"beam_size": 2, "length_penalty": 0.7, "max_len_b": 3}),
        # A preset sets the keys its file names; the run's clause limit is not one of them.
        (["decoding=beam"], {"beam_size": 5, "length_penalty": 1.5, "clause_split_tokens": 7}),
        (["decoding=beam", "decoding.clause_split_tokens=0"], {"clause_split_tokens": 0}),
    ],
)
def test_the_model_decodes_with_its_runs_settings_and_the_keys_the_command_sets(
    arguments, expected, corpus_mirror, tmp_path
):
    """As translate.py does: a recipe's length penalty holds unless the command changes it."""
    tok = BPETokenizer.train(["the cat sat on the mat.", "猫がマットに座った。"], vocab_size=300)
    run = [  # beside the tiny run's greedy
        "decoding.length_penalty=0.7",
        "decoding.max_len_b=3",
        "decoding.clause_split_tokens=7",
    ]
    model = save_tiny_checkpoint(tmp_path / "run" / "best.pt", tok, run)
    common = [
        "--checkpoint",
        str(model),
        "--limit",
        "2",
        "--data",
        "small_parallel_enja",
        f"data.mirror={corpus_mirror}",
        f"paths.raw_dir={tmp_path / 'raw'}",
        f"paths.cache_dir={tmp_path / 'cache'}",
        "--output-dir",
        str(tmp_path / "out"),
    ]
    assert evaluate_cli.main([*common, *arguments]) == 0
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text(encoding="utf-8"))
    assert {key: metrics["decoding"][key] for key in expected} == expected


def test_ensemble_is_recorded_and_of_one_checkpoint_twice_scores_like_it(
    checkpoint, corpus_mirror, tmp_path
):
    common = greedy_on_small_parallel_enja(checkpoint, corpus_mirror, tmp_path, limit=8)
    assert evaluate_cli.main([*common, "--output-dir", str(tmp_path / "single")]) == 0
    assert evaluate_cli.main([*common, "--ensemble", str(checkpoint)]) == 0
    # In a folder of its own, named by its settings (the length limit: a hash of the keys).
    (ensemble_dir,) = checkpoint.parent.glob("eval-test-ensemble-beam1-limit8-*")
    metrics = json.loads((ensemble_dir / "metrics.json").read_text(encoding="utf-8"))
    assert metrics["ensemble"] == [str(checkpoint)]
    hypotheses = (ensemble_dir / "hypotheses.txt").read_text(encoding="utf-8")
    assert hypotheses == (tmp_path / "single" / "hypotheses.txt").read_text(encoding="utf-8")


def test_evaluate_scores_each_corpus_of_a_mixed_split(
    checkpoint, corpus_mirror, tmp_path, capsys, monkeypatch
):
    """A split with a `corpus` column: the same hypotheses, in the split's order, and the same
    overall scores as without it, plus a section and a printed line per corpus; `--limit` takes
    the first of each corpus."""
    common = greedy_on_small_parallel_enja(checkpoint, corpus_mirror, tmp_path, limit=10)
    assert evaluate_cli.main([*common, "--output-dir", str(tmp_path / "one")]) == 0
    one_corpus = capsys.readouterr().out
    load_split, loaded = corpus.load_split, []

    def mixed_split(*args):
        pairs = load_split(*args).select(range(10))  # the 10 the other run scores
        loaded.append(pairs)
        corpora = ["enja" if i < 6 else "tanaka" for i in range(len(pairs))]
        return pairs.add_column(CORPUS_COLUMN, corpora)

    monkeypatch.setattr(corpus, "load_split", mixed_split)
    assert evaluate_cli.main([*common, "--output-dir", str(tmp_path / "mixed")]) == 0
    mixed_out = capsys.readouterr().out

    def read(name):
        hypotheses = (tmp_path / name / "hypotheses.txt").read_text(encoding="utf-8")
        return hypotheses, json.loads((tmp_path / name / "metrics.json").read_text("utf-8"))

    (one_hyps, one), (mixed_hyps, mixed) = read("one"), read("mixed")
    assert mixed_hyps == one_hyps
    assert "corpora" not in one
    timing = {"seconds", "sentences_per_second"}
    assert {k: v for k, v in mixed.items() if k not in timing | {"corpora"}} == {
        k: v for k, v in one.items() if k not in timing
    }
    corpora = mixed["corpora"]
    assert list(corpora) == ["enja", "tanaka"]
    assert (corpora["enja"]["sentences"], corpora["tanaka"]["sentences"]) == (6, 4)
    hypotheses = one_hyps.splitlines()
    references = loaded[0]["tgt"][:10]  # unsegmented: the corpus's detokenize_ja is on
    tanaka = [6, 7, 8, 9]
    alone = corpus_scores([hypotheses[i] for i in tanaka], [references[i] for i in tanaka], "ja")
    assert corpora["tanaka"]["bleu"] == pytest.approx(alone.bleu)
    assert corpora["tanaka"]["chrf"] == pytest.approx(alone.chrf)
    lines = mixed_out.splitlines()
    assert [line.split(":")[0] for line in lines if line.startswith("  ")] == ["  enja", "  tanaka"]
    assert re.search(
        r"^  enja: 6 sentences, BLEU \d+\.\d\d, chrF \d+\.\d\d, numbers kept ", mixed_out, re.M
    )
    assert len(lines) == len(one_corpus.splitlines()) + 2

    assert (
        evaluate_cli.main(
            [
                *greedy_on_small_parallel_enja(checkpoint, corpus_mirror, tmp_path, limit=4),
                "--output-dir",
                str(tmp_path / "limited"),
            ]
        )
        == 0
    )
    limited = read("limited")[1]
    assert limited["sentences"] == 4  # enja's rows 0 and 1, tanaka's 6 and 7
    assert {corpus: scores["sentences"] for corpus, scores in limited["corpora"].items()} == {
        "enja": 2,
        "tanaka": 2,
    }


def test_a_corpus_of_the_runs_mixture_is_scored_as_the_mixture_reads_it(train_config):
    """`--data small_parallel_enja` on an everyday_mix model: that member's pairs in the model's
    (raw) source style, not the corpus's own lowercased, tokenized one."""
    trained = train_config("data=everyday_mix").data
    member = train_config("data=small_parallel_enja").data
    assert evaluate_cli.scored_data(member, trained) == (trained, "small_parallel_enja")
    alone = train_config("data=tanaka_graded").data
    data, kept = evaluate_cli.scored_data(member, alone)
    assert (data.name, kept) == ("small_parallel_enja", None)
