"""A ja-en run end to end: `scripts/train.py experiment=smoke data.direction=ja-en` on the tiny
en/ja fixture, then its checkpoint through translate, evaluate and the server. The model is
barely trained: what is checked is the path (direction, joiner, input style, BLEU's words), not
the quality."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from llm_from_scratch.decoding.translator import Translator
from llm_from_scratch.programs import evaluate as evaluate_cli
from llm_from_scratch.programs import translate as translate_cli
from llm_from_scratch.serving.service import TranslationService

from .commands import run_train_script

REPO_ROOT = Path(__file__).resolve().parents[2]
FIXTURE = REPO_ROOT / "tests" / "data" / "fixtures" / "tiny_enja"
pytestmark = pytest.mark.slow  # one training run, shared by the tests here


@pytest.fixture(scope="module")
def ja_en_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """The final checkpoint of a 4-step ja-en smoke run, and the overrides that locate its data."""
    work = tmp_path_factory.mktemp("ja_en")
    shutil.copytree(FIXTURE, work / "raw" / "tiny_enja")
    paths = [f"paths.raw_dir={work / 'raw'}", f"paths.cache_dir={work / 'cache'}"]
    done = run_train_script(
        [
            "experiment=smoke",
            "data=local_parallel",
            "data.name=tiny_enja",
            "data.corpus.detokenize_ja=true",
            "data.direction=ja-en",
            *paths,
            f"paths.tokenizer_dir={work / 'tok'}",
            f"paths.run_dir={work / 'run'}",
            "tokenizer.vocab_size=400",
            "training.device=cpu",
            "training.precision=fp32",
            "training.max_steps=4",
            "training.eval_every=2",
            "training.save_every=2",
        ]
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert {path.name.split(".")[1] for path in (work / "tok").glob("*.json")} == {"ja", "en"}
    return work / "run" / "averaged.pt", paths


def test_the_checkpoint_reads_raw_japanese_and_joins_english_sentences_with_spaces(ja_en_run):
    checkpoint, _ = ja_en_run
    translator = Translator.from_checkpoint(checkpoint, device="cpu")
    assert (translator.source_lang, translator.target_lang) == ("ja", "en")
    assert (translator.conventions.joiner, translator.conventions.source_style) == (" ", "raw")
    [translation] = translator.translate(["私は緑茶が好きだ。彼は速く泳ぐ。"])
    assert [s.text for s in translation.sentences] == ["私は緑茶が好きだ。", "彼は速く泳ぐ。"]
    best = translation.candidates[0]
    assert translation.text == " ".join(sentence.text for sentence in best.sentences)
    # The sentences were encoded by the Japanese tokenizer: no byte fallback for its own text.
    pieces = [piece for sentence in translation.sentences for piece in sentence.pieces]
    assert not any(map(translator.src_tok.is_byte_token, pieces[0]))


def test_translate_prints_one_english_line_per_japanese_line(ja_en_run, capsys):
    checkpoint, _ = ja_en_run
    status = translate_cli.main(["--checkpoint", str(checkpoint), "私は緑茶が好きだ。", "犬。"])
    assert status == 0
    lines = capsys.readouterr().out.split("\n")[:-1]
    translator = Translator.from_checkpoint(checkpoint, device="cpu")
    assert lines == [t.text for t in translator.translate(["私は緑茶が好きだ。", "犬。"])]
    # Written by the English tokenizer: no kana or kanji, whatever the untrained model says.
    assert not any(re.search("[\u3040-\u30ff\u4e00-\u9fff]", line) for line in lines)


def test_evaluate_scores_english_with_13a(ja_en_run, tmp_path):
    checkpoint, paths = ja_en_run
    out = tmp_path / "eval"
    status = evaluate_cli.main(
        ["--checkpoint", str(checkpoint), "--beam", "1", "--output-dir", str(out), *paths]
    )
    assert status == 0
    metrics = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    assert metrics["direction"] == "ja-en" and metrics["sentences"] == 2
    assert "tok:13a" in metrics["bleu_signature"]
    assert "bleu_segmented" not in metrics  # spaces between English words are no segmentation
    # Another corpus config (--data, en-ja as written) is read in the model's direction.
    other = tmp_path / "other"
    data = ["--data", "local_parallel", "data.name=tiny_enja", "data.corpus.detokenize_ja=true"]
    arguments = ["--checkpoint", str(checkpoint), "--beam", "1", "--output-dir", str(other)]
    assert evaluate_cli.main([*arguments, *data, *paths]) == 0
    again = json.loads((other / "metrics.json").read_text(encoding="utf-8"))
    assert (again["direction"], again["bleu"]) == ("ja-en", metrics["bleu"])


def test_the_server_reports_the_direction(ja_en_run):
    checkpoint, _ = ja_en_run
    service = TranslationService(Translator.from_checkpoint(checkpoint, device="cpu"), run=None)
    assert service.info.direction == "ja-en"
