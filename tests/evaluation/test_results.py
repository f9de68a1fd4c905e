"""Each evaluation keeps its own results, a corpus of dev and test alone is scored, and the model
card quotes only a full test evaluation with the search its generation config names."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest

from llm_from_scratch.checkpoint import load_checkpoint
from llm_from_scratch.data.corpus import CorpusError, load_split
from llm_from_scratch.decoding.translator import Translator
from llm_from_scratch.export.model_card import card_metrics
from llm_from_scratch.paths import PathsConfig, RunDir
from llm_from_scratch.programs import evaluate as evaluate_cli
from llm_from_scratch.tokenizer.bpe import BPETokenizer
from tests.decoding.builders import save_tiny_checkpoint

# A corpus of news-like pairs with a dev and a test split and no train split, as wmt_news is.
DEV = [("The minister met the press.", "大臣は記者団と会った。")] * 2
TEST = [
    ("The bank opened a branch in Tokyo.", "銀行は東京に支店を開いた。"),
    ("Over 30 employees tested positive.", "３０人を超える従業員が陽性となった。"),
    ("The trial continues in a special court.", "裁判は特別法廷で続いている。"),
    ("Prices rose by 2 percent in May.", "５月の物価は２％上昇した。"),
]
NEWS = "news_fixture"
# The run's data: the corpus above, read as configs/data/local_parallel.yaml reads a folder.
NEWS_DATA = ["data=local_parallel", f"data.name={NEWS}", "data.corpus.splits.train=null"]


@pytest.fixture
def raw_dir(tmp_path: Path) -> Path:
    """A raw-data folder holding the corpus `NEWS`: {dev,test}.{en,ja}."""
    corpus = tmp_path / "raw" / NEWS
    corpus.mkdir(parents=True)
    for split, pairs in (("dev", DEV), ("test", TEST)):
        for side, lang in enumerate(("en", "ja")):
            text = "".join(f"{pair[side]}\n" for pair in pairs)
            (corpus / f"{split}.{lang}").write_text(text, encoding="utf-8")
    return tmp_path / "raw"


@pytest.fixture
def run(tmp_path: Path) -> Path:
    """An untrained tiny model trained, its config says, on `NEWS` with a beam of 2."""
    tok = BPETokenizer.train([pair[0] for pair in TEST] + [pair[1] for pair in TEST], 400)
    # A short length limit: an untrained model runs to it.
    decoding = ["decoding.beam_size=2", "decoding.max_len_a=0", "decoding.max_len_b=3"]
    return save_tiny_checkpoint(tmp_path / "run" / "best.pt", tok, [*NEWS_DATA, *decoding])


def evaluate(checkpoint: Path, raw_dir: Path, *arguments: str) -> int:
    return evaluate_cli.main(
        [
            "--checkpoint",
            str(checkpoint),
            f"paths.raw_dir={raw_dir}",
            f"paths.cache_dir={raw_dir.parent / 'cache'}",
            *arguments,
        ]
    )


def contents(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {
        name: ((folder / name).read_bytes(), (folder / name).stat().st_mtime_ns)
        for name in ("hypotheses.txt", "metrics.json")
    }


def test_a_corpus_of_dev_and_test_alone_is_scored_with_both_signatures(
    run, raw_dir, tmp_path, capsys
):
    assert evaluate(run, raw_dir, "--data", "local_parallel", *NEWS_DATA[1:]) == 0
    printed = capsys.readouterr().out
    folder = run.parent / "eval-test-beam2"  # the run's own corpus: no corpus in the name
    metrics = json.loads((folder / "metrics.json").read_text(encoding="utf-8"))
    assert (metrics["dataset"], metrics["sentences"]) == (NEWS, len(TEST))
    assert "tok:ja-mecab" in metrics["bleu_signature"]
    assert "nc:6|nw:0" in metrics["chrf_signature"]  # chrF2's, the field's
    assert f"BLEU  {metrics['bleu']:.2f}  {metrics['bleu_signature']}" in printed
    assert f"chrF  {metrics['chrf']:.2f}  {metrics['chrf_signature']}" in printed
    assert evaluate(run, raw_dir, "--split", "dev") == 0
    dev = json.loads((run.parent / "eval-dev-beam2" / "metrics.json").read_text("utf-8"))
    assert dev["sentences"] == len(DEV)


def test_wmt_news_is_one_word_away(run, tmp_path, corpus_mirror, capsys):
    """`--data wmt_news`: copied from the mirror (DATA_MIRROR), scored beside the run's own."""
    assert evaluate(run, tmp_path / "raw", "--data", "wmt_news", "--limit", "2") == 0
    folder = run.parent / "eval-wmt_news-test-beam2-limit2"
    metrics = json.loads((folder / "metrics.json").read_text(encoding="utf-8"))
    assert (metrics["dataset"], metrics["sentences"]) == ("wmt_news", 2)
    printed = capsys.readouterr().out
    assert metrics["bleu_signature"] in printed and "tok:ja-mecab" in metrics["bleu_signature"]
    assert metrics["chrf_signature"] in printed and "nc:6|nw:0" in metrics["chrf_signature"]


def test_a_corpus_without_train_cannot_be_trained_on(raw_dir, tmp_path, compose_config):
    from llm_from_scratch.data.config import DataConfig
    from llm_from_scratch.schema import to_schema

    data = to_schema(compose_config("prepare_data", NEWS_DATA).data, DataConfig)
    paths = PathsConfig(raw_dir=str(raw_dir), cache_dir=str(tmp_path / "cache"))
    assert len(load_split(data, "test", paths)) == len(TEST)
    with pytest.raises(CorpusError, match=f"{NEWS} has no train split .dev and test only."):
        load_split(data, "train", paths)


def test_a_limited_greedy_or_other_run_after_a_full_one_leaves_its_files_unchanged(run, raw_dir):
    assert evaluate(run, raw_dir) == 0
    full = run.parent / "eval-test-beam2"
    before = contents(full)
    assert evaluate(run, raw_dir, "--limit", "2") == 0
    assert evaluate(run, raw_dir, "--beam", "1") == 0
    assert evaluate(run, raw_dir, "decoding.max_len_b=2") == 0
    assert contents(full) == before
    names = {path.name for path in RunDir(run.parent).evaluations()}
    named = {"eval-test-beam1", "eval-test-beam2", "eval-test-beam2-limit2"}
    assert named < names and len(names) == 4
    (hashed,) = names - named
    assert re.fullmatch(r"eval-test-beam2-[0-9a-f]{8}", hashed)
    other = json.loads((run.parent / hashed / "metrics.json").read_text(encoding="utf-8"))
    assert other["settings"]["other_decoding"] == {"max_len_b": 2}
    limited = json.loads(
        (run.parent / "eval-test-beam2-limit2" / "metrics.json").read_text("utf-8")
    )
    assert (limited["limit"], limited["sentences"]) == (2, 2)


def test_the_model_card_quotes_only_a_full_test_run_with_its_generation_search(run, raw_dir):
    config = load_checkpoint(run)["config"]
    assert evaluate(run, raw_dir, "--beam", "1") == 0
    assert evaluate(run, raw_dir, "--limit", "3") == 0
    assert evaluate(run, raw_dir, "--split", "dev") == 0
    evaluations = RunDir(run.parent).evaluations()
    assert len(evaluations) == 3 and card_metrics(evaluations, run, config) is None
    assert evaluate(run, raw_dir) == 0
    quoted = card_metrics(RunDir(run.parent).evaluations(), run, config)
    assert quoted is not None
    assert (quoted["decoding"]["beam_size"], quoted["limit"], quoted["split"]) == (2, None, "test")
    # A folder from before the settings were recorded, with the same search, still counts.
    legacy = run.parent / "eval-test"
    legacy.mkdir()
    old = {k: v for k, v in quoted.items() if k not in ("limit", "settings")}
    (legacy / "metrics.json").write_text(json.dumps(old), encoding="utf-8")
    assert card_metrics([legacy], run, config) == old
    assert card_metrics([legacy], run.with_name("averaged.pt"), config) is None


def test_the_export_card_says_when_it_has_no_figures(run, raw_dir, tmp_path):
    pytest.importorskip("transformers")
    from llm_from_scratch.export.transformers_model import export_to_transformers

    assert evaluate(run, raw_dir, "--beam", "1") == 0
    folder = export_to_transformers(run, tmp_path / "hf").directory
    card = (folder / "README.md").read_text(encoding="utf-8")
    assert "model-index" not in card and "No full test evaluation with this search (beam 2" in card
    assert evaluate(run, raw_dir) == 0
    folder = export_to_transformers(run, tmp_path / "hf", force=True).directory
    card = (folder / "README.md").read_text(encoding="utf-8")
    assert "model-index" in card and "beam 2." in card


@pytest.mark.parametrize("where", ["output-dir", "run-dir"])
def test_an_unwritable_folder_is_refused_before_decoding(
    run, raw_dir, tmp_path, capsys, monkeypatch, where
):
    def decode(*args, **kwargs):
        raise AssertionError("decoded before checking the output folder")

    monkeypatch.setattr(Translator, "translate_iter", decode)
    if where == "run-dir":
        if os.geteuid() == 0:
            pytest.skip("root writes to a read-only folder")
        run.parent.chmod(0o555)
        arguments: list[str] = []
    else:  # /sys refuses new files even to root
        if not Path("/sys").is_dir():
            pytest.skip("needs a Linux /sys")
        arguments = ["--output-dir", "/sys/llm-from-scratch-eval"]
    command = ["evaluate.py", "--checkpoint", str(run), f"paths.raw_dir={raw_dir}"]
    monkeypatch.setattr(sys, "argv", [*command, f"paths.cache_dir={tmp_path}", *arguments])
    try:
        with pytest.raises(SystemExit) as exit_status:
            evaluate_cli.run()
    finally:
        run.parent.chmod(0o755)
    assert exit_status.value.code == 2
    error = capsys.readouterr().err
    assert "Traceback" not in error
    assert re.search(
        r"^error: cannot write the evaluation \S+: \S+ is not writable \(", error, re.M
    )
    # Beside which model was loaded (the run's folder is known once it is), one line.
    assert len([line for line in error.splitlines() if not line.startswith("model: ")]) == 1
