"""scripts/back_translate.py: monolingual text into tagged pairs a mixture reads; resumed after an
interruption as if never stopped; not written twice; the wrong model refused before any work."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from llm_from_scratch.data.back_translation import LINEAGE
from llm_from_scratch.data.placeholders import BACK_TRANSLATION_TAG
from llm_from_scratch.decoding.translator import Translator
from llm_from_scratch.errors import UserError
from llm_from_scratch.programs import back_translate as back_translate_cli

from .builders import save_tiny_checkpoint

TEXT = [
    "これはテストです。",
    "毎日新聞、2008年1月24日。",  # a source line: skipped
    "これはテストです。これはテストです。",
    "テストです。",
    "これは",
    "",
]
KEPT = [line for k, line in enumerate(TEXT) if k not in (1, 5)]


@pytest.fixture(scope="module")
def ja_en_checkpoint(tmp_path_factory, tokenizer) -> Path:
    path = tmp_path_factory.mktemp("ja_en") / "best.pt"
    return save_tiny_checkpoint(path, tokenizer, ["data.direction=ja-en"])


@pytest.fixture
def mirror(tmp_path: Path) -> Path:
    folder = tmp_path / "mirror" / "wikinews_ja"
    folder.mkdir(parents=True)
    with gzip.open(folder / "train.ja.gz", "wt", encoding="utf-8") as file:
        file.write("".join(f"{line}\n" for line in TEXT))
    return folder.parent


def arguments(checkpoint: Path, mirror: Path, root: Path, *more: str) -> list[str]:
    return [
        "--checkpoint",
        str(checkpoint),
        "--data",
        "wikinews_ja",
        "data.files=[]",  # the fixture's file, not the real one's checksum
        f"data.mirror={mirror}",
        f"paths.root={root}",
        *more,
    ]


def pairs(folder: Path) -> tuple[list[str], list[str]]:
    sides = [folder / f"train.{lang}.gz" for lang in ("en", "ja")]
    en, ja = (gzip.decompress(path.read_bytes()).decode().split("\n")[:-1] for path in sides)
    return en, ja


def test_pairs_are_tagged_translations_of_the_text_kept(ja_en_checkpoint, mirror, tmp_path):
    assert back_translate_cli.main(arguments(ja_en_checkpoint, mirror, tmp_path)) == 0
    folder = tmp_path / "data" / "raw" / "wikinews_ja_bt"
    en, ja = pairs(folder)
    assert ja == KEPT
    assert all(line.startswith(f"{BACK_TRANSLATION_TAG} ") or line == "" for line in en)
    lineage = json.loads((folder / LINEAGE).read_text())
    assert lineage["direction"] == "ja-en"
    assert lineage["text"]["sentences"] == len(KEPT)
    assert lineage["summary"]["pairs"] == len(KEPT)


def test_the_same_model_and_text_are_not_translated_again(
    ja_en_checkpoint, mirror, tmp_path, monkeypatch, capsys
):
    args = arguments(ja_en_checkpoint, mirror, tmp_path)
    assert back_translate_cli.main(args) == 0
    before = pairs(tmp_path / "data" / "raw" / "wikinews_ja_bt")

    def refuse(*_: object) -> None:
        raise AssertionError("translated again")

    monkeypatch.setattr(Translator, "translate", refuse)
    assert back_translate_cli.main(args) == 0
    assert "written already" in capsys.readouterr().err
    assert pairs(tmp_path / "data" / "raw" / "wikinews_ja_bt") == before


def test_interrupted_then_resumed_writes_what_one_run_writes(
    ja_en_checkpoint, mirror, tmp_path, monkeypatch
):
    monkeypatch.setattr(back_translate_cli, "BATCH_SENTENCES", 2)
    assert back_translate_cli.main(arguments(ja_en_checkpoint, mirror, tmp_path / "once")) == 0

    translate = Translator.translate
    calls = []

    def stopped_at_the_second_batch(self, texts):
        calls.append(texts)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return translate(self, texts)

    monkeypatch.setattr(Translator, "translate", stopped_at_the_second_batch)
    args = arguments(ja_en_checkpoint, mirror, tmp_path / "twice")
    assert back_translate_cli.main(args) == 130
    calls.clear()

    def counted(self, texts):
        calls.append(texts)
        return translate(self, texts)

    monkeypatch.setattr(Translator, "translate", counted)
    assert back_translate_cli.main(args) == 0
    assert calls == [KEPT[2:4]]  # only what the first run had not written
    once = tmp_path / "once" / "data" / "raw" / "wikinews_ja_bt"
    twice = tmp_path / "twice" / "data" / "raw" / "wikinews_ja_bt"
    for lang in ("en", "ja"):
        name = f"train.{lang}.gz"
        assert (twice / name).read_bytes() == (once / name).read_bytes()


def test_a_model_of_the_wrong_direction_is_refused_in_one_line(
    tokenizer, mirror, tmp_path, monkeypatch
):
    en_ja = save_tiny_checkpoint(tmp_path / "en_ja.pt", tokenizer)
    with pytest.raises(UserError, match="needs a ja-en model") as refused:
        back_translate_cli.main(arguments(en_ja, mirror, tmp_path))
    assert "\n" not in str(refused.value)
    assert not (tmp_path / "data" / "raw" / "wikinews_ja_bt").exists()


def test_a_limit_translates_the_first_sentences_only(ja_en_checkpoint, mirror, tmp_path):
    args = arguments(ja_en_checkpoint, mirror, tmp_path, "--limit", "2")
    assert back_translate_cli.main(args) == 0
    assert pairs(tmp_path / "data" / "raw" / "wikinews_ja_bt")[1] == KEPT[:2]


def test_a_name_that_holds_another_corpus_is_refused(
    ja_en_checkpoint, mirror, tmp_path, monkeypatch
):
    real = tmp_path / "data" / "raw" / "small_parallel_enja"
    real.mkdir(parents=True)
    (real / "train.en").write_text("hello .\n")
    args = arguments(ja_en_checkpoint, mirror, tmp_path, "--name", "small_parallel_enja")

    def not_loaded(*_: object) -> None:
        raise AssertionError("the model loaded before the name was refused")

    monkeypatch.setattr(back_translate_cli, "load_translator", not_loaded)
    with pytest.raises(UserError, match="did not write: choose another --name"):
        back_translate_cli.main(args)
    assert sorted(path.name for path in real.iterdir()) == ["train.en"]
