import dataclasses
import json

import datasets
import pytest

from llm_from_scratch.data.config import ExtraPairs
from llm_from_scratch.data.corpus import (
    CorpusError,
    load_extra_train,
    load_split,
)
from llm_from_scratch.data.sources import fetch_dataset


def test_parallel_split_reads_aligned_lines_and_detokenizes_only_japanese(tiny_enja, tiny_paths):
    train = load_split(tiny_enja, "train", tiny_paths)
    assert train.column_names == ["src", "tgt"]
    assert len(train) == 12
    assert train[1] == {"src": "he lives in new york .", "tgt": "彼はNew Yorkに住んでいる。"}
    assert [len(load_split(tiny_enja, split, tiny_paths)) for split in ("dev", "test")] == [3, 2]


def test_detokenize_false_keeps_the_segmentation(tiny_enja, tiny_paths):
    tiny_enja.corpus.detokenize_ja = False
    assert load_split(tiny_enja, "train", tiny_paths)[0]["tgt"] == "私 は 緑茶 が 好き だ 。"


def test_misaligned_parallel_files_name_both_files_and_counts(tmp_path, local_config, paths):
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "train.en").write_text("one\ntwo\nthree\n")
    (tmp_path / "bad" / "train.ja").write_text("一\n二\n")
    with pytest.raises(CorpusError, match=r"train\.en has 3 lines but .*train\.ja has 2"):
        load_split(local_config("bad"), "train", paths)


def test_tsv_keeps_quotes_and_counts_blank_lines_as_empty_pairs(tmp_path, local_config, paths):
    (tmp_path / "tsv").mkdir()
    (tmp_path / "tsv" / "train.tsv").write_text(
        'He said "hi".\t彼は「やあ」と言った。\n\nYes.\tはい。\n'
    )
    corpus = {"format": "tsv", "splits": {"train": "train.tsv"}}
    cfg = local_config("tsv", corpus={**corpus, "dev_fraction": 0.0, "test_fraction": 0.0})
    assert load_split(cfg, "train", paths).to_dict() == {
        "src": ['He said "hi".', "", "Yes."],
        "tgt": ["彼は「やあ」と言った。", "", "はい。"],
    }


def test_tsv_line_without_exactly_one_tab_is_reported_with_its_number(
    tmp_path, local_config, paths
):
    (tmp_path / "tsv").mkdir()
    (tmp_path / "tsv" / "train.tsv").write_text("a\tあ\nb\tい\tう\n")
    cfg = local_config("tsv", corpus={"format": "tsv", "splits": {"train": "train.tsv"}})
    with pytest.raises(CorpusError, match="first at line 2"):
        load_split(cfg, "train", paths)


def test_jsonl_uses_the_column_mapping_and_turns_null_into_empty(tmp_path, local_config, paths):
    (tmp_path / "jl").mkdir()
    rows = [
        {"english": "Hello.", "japanese": "こんにちは。", "id": 1},
        {"english": "Bye.", "japanese": None, "id": 2},
    ]
    (tmp_path / "jl" / "all.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    cfg = local_config(
        "jl",
        corpus={
            "format": "jsonl",
            "splits": {"train": "all.jsonl", "dev": "all.jsonl"},
            "src_column": "english",
            "tgt_column": "japanese",
        },
    )
    assert load_split(cfg, "dev", paths).to_dict() == {
        "src": ["Hello.", "Bye."],
        "tgt": ["こんにちは。", ""],
    }


def _save_hub_copy(path):
    def split(n, tag):
        return datasets.Dataset.from_dict(
            {
                "id": list(range(n)),
                "en_sentence": [f"{tag} {i}" for i in range(n)],
                "ja_sentence": [f"{tag}{i}です" for i in range(n)],
            }
        )

    datasets.DatasetDict(
        {"train": split(5, "train"), "validation": split(2, "dev"), "test": split(2, "test")}
    ).save_to_disk(str(path))


def test_hub_dataset_saved_to_disk_is_read_with_its_split_and_column_names(
    tmp_path, local_config, paths
):
    _save_hub_copy(tmp_path / "bsd")
    cfg = local_config(
        "bsd",
        source="hub",
        hub_id="ryo0634/bsd_ja_en",
        corpus={
            "format": "hub",
            "splits": {"train": "train", "dev": "validation", "test": "test"},
            "src_column": "en_sentence",
            "tgt_column": "ja_sentence",
        },
    )
    assert load_split(cfg, "dev", paths).to_dict() == {
        "src": ["dev 0", "dev 1"],
        "tgt": ["dev0です", "dev1です"],
    }
    assert len(load_split(cfg, "train", paths)) == 5


def test_hub_dataset_without_the_mapped_column_names_the_available_ones(
    tmp_path, local_config, paths
):
    _save_hub_copy(tmp_path / "bsd")
    cfg = local_config("bsd", corpus={"format": "hub", "src_column": "en", "tgt_column": "ja"})
    with pytest.raises(CorpusError, match=r"no column 'en', 'ja'.*en_sentence"):
        load_split(cfg, "train", paths)


def test_seeded_split_partitions_train_reproducibly(tmp_path, local_config, paths):
    (tmp_path / "one").mkdir()
    (tmp_path / "one" / "all.tsv").write_text("".join(f"s{i}\tt{i}\n" for i in range(100)))

    def splits(seed):
        cfg = local_config(
            "one",
            corpus={
                "format": "tsv",
                "splits": {"train": "all.tsv"},
                "split_seed": seed,
                "dev_fraction": 0.1,
                "test_fraction": 0.05,
            },
        )
        return {
            name: list(load_split(cfg, name, paths)["src"]) for name in ("train", "dev", "test")
        }

    first = splits(seed=1)
    assert [len(first[name]) for name in ("train", "dev", "test")] == [85, 10, 5]
    assert sorted(first["train"] + first["dev"] + first["test"]) == sorted(
        f"s{i}" for i in range(100)
    )
    assert splits(seed=1) == first
    assert splits(seed=2)["dev"] != first["dev"]


@pytest.mark.slow
def test_extra_train_pairs_are_read_in_the_corpus_style(tmp_path, tiny_enja, tiny_paths):
    (tmp_path / "extra.en").write_text("He said, \u201cI'm tired.\u201d\nOK.\n")
    (tmp_path / "extra.ja").write_text("彼 は 疲れ た と 言 っ た 。\n分か っ た 。\n")
    tiny_enja.corpus.source_style = "lowercase_tokenized"
    tiny_enja.extra_train = [ExtraPairs(str(tmp_path / "extra.en"), str(tmp_path / "extra.ja"))]
    extra = load_extra_train(tiny_enja, tiny_paths)
    assert extra.to_dict() == {
        "src": ["he said , \u201ci 'm tired . \u201d", "ok ."],
        "tgt": ["彼は疲れたと言った。", "分かった。"],
    }
    assert (
        len(load_split(tiny_enja, "train", tiny_paths)) == 12
    )  # the corpus split itself is unchanged


def test_extra_train_files_must_exist_and_align(tmp_path, tiny_enja, tiny_paths):
    assert load_extra_train(tiny_enja, tiny_paths) is None
    (tmp_path / "extra.en").write_text("one\ntwo\n")
    (tmp_path / "extra.ja").write_text("一\n")
    tiny_enja.extra_train = [ExtraPairs(str(tmp_path / "extra.en"), str(tmp_path / "missing.ja"))]
    with pytest.raises(CorpusError, match=r"missing\.ja not found: data\.extra_train names it"):
        load_extra_train(tiny_enja, tiny_paths)
    tiny_enja.extra_train = [ExtraPairs(str(tmp_path / "extra.en"), str(tmp_path / "extra.ja"))]
    with pytest.raises(CorpusError, match=r"extra\.en has 2 lines but .*extra\.ja has 1"):
        load_extra_train(tiny_enja, tiny_paths)


@pytest.mark.parametrize(
    ("format_", "train", "files", "bad_file"),
    [
        ("tsv", "train.tsv", {"train.tsv": [b"a\t\xe3\x81\x82", b"caf\xe9\tx"]}, "train.tsv"),
        ("parallel", "train", {"train.en": [b"a", b"caf\xe9"], "train.ja": [b"x"] * 2}, "train.en"),
        ("jsonl", "t.jsonl", {"t.jsonl": [b'{"en": "a", "ja": "b"}', b'{"en":"\xe9"}']}, "t.jsonl"),
    ],
)  # fmt: skip
def test_invalid_utf8_names_the_file_and_the_line(
    tmp_path, local_config, paths, format_, train, files, bad_file
):
    (tmp_path / "bad").mkdir()
    for name, lines in files.items():
        (tmp_path / "bad" / name).write_bytes(b"\n".join(lines) + b"\n")
    cfg = local_config("bad", corpus={"format": format_, "splits": {"train": train}})
    with pytest.raises(CorpusError) as error:
        load_split(cfg, "train", paths)
    assert str(error.value) == (
        f"{tmp_path / 'bad' / bad_file} is not valid UTF-8: line 2 has the byte 0xe9; save the "
        "file as UTF-8"
    )


@pytest.mark.parametrize("format_", ["tsv", "jsonl"])
@pytest.mark.parametrize("split", ["train", "dev"])
def test_an_empty_file_is_named(tmp_path, local_config, paths, format_, split):
    (tmp_path / "empty").mkdir()
    good = "a\tb\n" if format_ == "tsv" else '{"en": "a", "ja": "b"}\n'
    names = {"train": f"train.{format_}", "dev": f"dev.{format_}"}
    for name in names.values():
        (tmp_path / "empty" / name).write_text("" if name == names[split] else good)
    cfg = local_config("empty", corpus={"format": format_, "splits": names})
    with pytest.raises(CorpusError, match=rf"{names[split]} is empty: every file of a corpus"):
        load_split(cfg, split, paths)


def test_a_split_carved_to_nothing_is_named(tmp_path, local_config, paths):
    (tmp_path / "few").mkdir()
    (tmp_path / "few" / "train.tsv").write_text("".join(f"s{i}\tt{i}\n" for i in range(10)))
    cfg = local_config("few", corpus={"format": "tsv", "splits": {"train": "train.tsv"}})
    assert len(load_split(cfg, "train", paths)) == 10  # 1% of 10 pairs rounds to none
    with pytest.raises(CorpusError, match=r"dev split of few has no pairs: .*dev_fraction=0\.01"):
        load_split(cfg, "dev", paths)


def test_local_tsv_config_with_only_a_train_file_carves_dev_and_test(train_config, tmp_path):

    config = train_config("data=local_tsv")
    (tmp_path / config.data.name).mkdir()
    lines = "".join(f"s{i}\tt{i}\n" for i in range(1000))
    (tmp_path / config.data.name / "train.tsv").write_text(lines)
    paths = dataclasses.replace(config.paths, raw_dir=str(tmp_path), cache_dir=str(tmp_path))
    sizes = [len(load_split(config.data, split, paths)) for split in ("train", "dev", "test")]
    assert sizes == [980, 10, 10]


def write_documents(directory, sizes: dict[str, int]) -> None:
    """A JSONL pool of pairs in document order, `sizes[document]` pairs each."""
    directory.mkdir()
    lines = [
        json.dumps({"document": document, "no": no, "speaker": "A", "en": f"{document} {no}",
                    "ja": f"{document}の{no}"})
        for document, size in sizes.items()
        for no in range(1, size + 1)
    ]  # fmt: skip
    (directory / "pool.jsonl").write_text("\n".join(lines) + "\n")


def grouped(local_config, seed: int = 1234, **corpus: object):
    return local_config(
        "talks",
        corpus={
            "format": "jsonl",
            "splits": {"train": "pool.jsonl"},
            "group_column": "document",
            "dev_fraction": 0.2,
            "test_fraction": 0.0,
            "split_seed": seed,
            **corpus,
        },
    )


def documents_of(pairs) -> set[str]:
    return {source.split()[0] for source in pairs["src"]}


def test_dev_is_carved_by_document_and_no_document_lies_in_two_splits(
    tmp_path, local_config, paths
):
    sizes = {f"d{k}": 5 + 3 * k for k in range(10)}  # 185 pairs in 10 documents
    write_documents(tmp_path / "talks", sizes)

    def splits(seed: int) -> dict[str, list[str]]:
        cfg = grouped(local_config, seed)
        return {name: load_split(cfg, name, paths) for name in ("train", "dev", "test")}

    first = splits(1234)
    train, dev = documents_of(first["train"]), documents_of(first["dev"])
    assert not train & dev and train | dev == set(sizes)
    assert len(first["dev"]) == sum(sizes[document] for document in dev)  # whole documents
    assert abs(len(first["dev"]) - 37) <= max(sizes.values()) / 2  # near 20%, by whole documents
    assert len(first["test"]) == 0  # a fraction of 0: held back, not an error
    assert first["train"].column_names == first["dev"].column_names == ["src", "tgt"]
    assert splits(1234)["dev"]["src"] == first["dev"]["src"]
    assert any(documents_of(splits(seed)["dev"]) != dev for seed in (1, 2))


def test_a_group_column_the_file_lacks_is_named(tmp_path, local_config, paths):
    write_documents(tmp_path / "talks", {"a": 3, "b": 3})
    cfg = grouped(local_config, group_column="dialogue")
    with pytest.raises(CorpusError, match=r"has no column 'dialogue' .*data\.corpus\.group_column"):
        load_split(cfg, "train", paths)


def test_a_group_column_needs_a_format_with_columns(tmp_path, local_config, paths):
    (tmp_path / "tsv").mkdir()
    (tmp_path / "tsv" / "train.tsv").write_text("a\tb\n")
    cfg = local_config("tsv", corpus={"format": "tsv", "splits": {"train": "train.tsv"},
                                      "group_column": "document"})  # fmt: skip
    with pytest.raises(CorpusError, match=r"group_column='document' needs a format with columns"):
        load_split(cfg, "train", paths)


def test_the_dialogue_corpora_are_read_as_given_with_dev_carved_by_document(
    train_config, corpus_mirror, tmp_path
):
    for name, pool in (("ami_meeting", 2000), ("bsd_dialogue", 2051)):
        config = train_config(f"data={name}")
        paths = dataclasses.replace(config.paths, raw_dir=str(tmp_path), cache_dir=str(tmp_path))
        fetch_dataset(config.data, paths)
        rows = [json.loads(line) for line in (tmp_path / name / "dev.jsonl").open()]
        document = {(row["en"], row["ja"]): row["document"] for row in rows}
        split = {s: load_split(config.data, s, paths) for s in ("train", "dev", "test")}
        assert len(split["train"]) + len(split["dev"]) == pool and len(split["test"]) == 0
        train_pairs = set(zip(split["train"]["src"], split["train"]["tgt"], strict=True))
        dev_pairs = set(zip(split["dev"]["src"], split["dev"]["tgt"], strict=True))
        # A pair that occurs in several documents ("Okay.") tells no document apart.
        only_one = {pair for pair in document if sum(r["en"] == pair[0] for r in rows) == 1}
        train_docs = {document[pair] for pair in train_pairs & only_one}
        dev_docs = {document[pair] for pair in dev_pairs & only_one}
        assert dev_docs and not train_docs & dev_docs, name


@pytest.mark.parametrize("split", ["train", "test"])  # what training reads, what evaluate scores
@pytest.mark.parametrize("format_", ["parallel", "tsv", "jsonl"])
def test_a_file_saved_with_a_byte_order_mark_reads_without_it(
    tmp_path, local_config, paths, format_, split
):
    bom = "\ufeff"
    folder = tmp_path / "bom"
    folder.mkdir()
    pairs = [("Hello.", "こんにちは。"), ("Bye.", "さようなら。")]
    if format_ == "parallel":
        for side, lang in enumerate(("en", "ja")):
            text = "".join(f"{pair[side]}\n" for pair in pairs)
            (folder / f"{split}.{lang}").write_text(bom + text, encoding="utf-8")
        corpus = {"splits": {"train": "train", "dev": "train", "test": "test"}}
    else:
        lines = [f"{en}\t{ja}" if format_ == "tsv" else json.dumps({"en": en, "ja": ja})
                 for en, ja in pairs]  # fmt: skip
        name = f"{split}.{format_}"
        (folder / name).write_text(bom + "\n".join(lines) + "\n", encoding="utf-8")
        columns = {"src_column": "en", "tgt_column": "ja"} if format_ == "jsonl" else {}
        corpus = {"format": format_, "splits": {"train": name, "dev": name, "test": name}}
        corpus |= columns
    cfg = local_config("bom", corpus={**corpus, "dev_fraction": 0.0, "test_fraction": 0.0})
    read = load_split(cfg, split, paths)
    assert (read["src"], read["tgt"]) == ([en for en, _ in pairs], [ja for _, ja in pairs])
