"""Compressed corpus files (.gz, .xz, .bz2) read like plain ones, in every local format."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
from pathlib import Path

import pytest

from llm_from_scratch.data.config import CorpusConfig
from llm_from_scratch.data.corpus import CorpusError, load_split

COMPRESSORS = {".gz": gzip.compress, ".xz": lzma.compress, ".bz2": bz2.compress}
PAIRS = [("Kyoto is a city.", "京都は市である。"), ('He said "hi".', "彼は「やあ」と言った。")]


def write(path: Path, text: str, suffix: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = text.encode("utf-8")
    path.write_bytes(COMPRESSORS[suffix](data) if suffix else data)


def expected() -> dict[str, list[str]]:
    return {"src": [en for en, _ in PAIRS], "tgt": [ja for _, ja in PAIRS]}


@pytest.mark.slow  # over 5 s on 2 cores
@pytest.mark.parametrize("suffix", sorted(COMPRESSORS))
def test_parallel_files_named_with_lang_are_read_decompressed(
    tmp_path, local_config, paths, suffix
):
    for lang, side in (("en", 0), ("ja", 1)):
        text = "".join(pair[side] + "\n" for pair in PAIRS)
        write(tmp_path / "c" / f"train.{lang}{suffix}", text, suffix)
        write(tmp_path / "c" / f"dev.{lang}", text, "")
    splits = {"train": f"train.{{lang}}{suffix}", "dev": "dev", "test": "dev"}
    cfg = local_config("c", corpus={"splits": splits})
    assert load_split(cfg, "train", paths).to_dict() == expected()
    assert load_split(cfg, "dev", paths).to_dict() == expected()


def test_side_file_names_a_parallel_split_by_stem_or_template():
    corpus = CorpusConfig(splits={"train": "train.{lang}.gz", "dev": "dev", "test": None})
    assert corpus.file_names == ["train.en.gz", "train.ja.gz", "dev.en", "dev.ja"]


@pytest.mark.parametrize("suffix", sorted(COMPRESSORS))
@pytest.mark.parametrize("format_", ["tsv", "jsonl"])
def test_tsv_and_jsonl_are_read_decompressed(tmp_path, local_config, paths, suffix, format_):
    if format_ == "tsv":
        text = "".join(f"{en}\t{ja}\n" for en, ja in PAIRS)
    else:
        text = "".join(json.dumps({"en": en, "ja": ja}) + "\n" for en, ja in PAIRS)
    name = f"train.{format_}{suffix}"
    write(tmp_path / "c" / name, text, suffix)
    corpus = {"format": format_, "splits": {"train": name, "dev": name, "test": name}}
    assert load_split(local_config("c", corpus=corpus), "test", paths).to_dict() == expected()


@pytest.mark.parametrize("suffix", sorted(COMPRESSORS))
def test_a_damaged_compressed_file_is_one_line_naming_it(tmp_path, local_config, paths, suffix):
    good = COMPRESSORS[suffix](("".join(f"{en}\t{ja}\n" for en, ja in PAIRS) * 200).encode())
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / f"train.tsv{suffix}").write_bytes(good[: len(good) // 2])
    corpus = {"format": "tsv", "splits": {"train": f"train.tsv{suffix}"}}
    with pytest.raises(CorpusError) as error:
        load_split(local_config("c", corpus=corpus), "train", paths)
    message = str(error.value)
    assert "\n" not in message
    assert message.startswith(f"{tmp_path / 'c' / f'train.tsv{suffix}'} cannot be decompressed")


def test_a_file_that_is_not_gzip_is_named(tmp_path, local_config, paths):
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "train.tsv.gz").write_text("a\tb\n")
    corpus = {"format": "tsv", "splits": {"train": "train.tsv.gz"}}
    with pytest.raises(CorpusError, match=r"train\.tsv\.gz cannot be decompressed after line 0"):
        load_split(local_config("c", corpus=corpus), "train", paths)


def test_invalid_utf8_inside_gzip_names_the_line(tmp_path, local_config, paths):
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "train.tsv.gz").write_bytes(gzip.compress(b"a\tb\ncaf\xe9\tx\n"))
    corpus = {"format": "tsv", "splits": {"train": "train.tsv.gz"}}
    with pytest.raises(CorpusError, match="is not valid UTF-8: line 2 has the byte 0xe9"):
        load_split(local_config("c", corpus=corpus), "train", paths)


def test_a_compressed_empty_file_is_named(tmp_path, local_config, paths):
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "train.tsv.gz").write_bytes(gzip.compress(b""))
    corpus = {"format": "tsv", "splits": {"train": "train.tsv.gz"}}
    with pytest.raises(CorpusError, match=r"train\.tsv\.gz is empty"):
        load_split(local_config("c", corpus=corpus), "train", paths)


def test_experiment_kyoto_wiki_reads_the_gzip_train_files_with_a_vocabulary_that_holds_them(
    train_config,
):

    config = train_config("experiment=kyoto_wiki")
    assert config.data.corpus.file_names[:2] == ["train.en.gz", "train.ja.gz"]
    assert sorted(config.data.corpus.file_names) == sorted(f.name for f in config.data.files)
    assert config.tokenizer.vocab_size == 8000
    default = train_config()
    assert (default.data.name, default.tokenizer.vocab_size) == ("everyday_mix", 8000)
