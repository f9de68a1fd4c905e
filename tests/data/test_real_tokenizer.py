"""The data stage end to end with the real BPE tokenizer, trained on the tiny fixture as the
train program does (`load_or_train_tokenizers`, then `build_data`)."""

import dataclasses

import datasets
import pytest

from llm_from_scratch.data import cleaning
from llm_from_scratch.data.config import DataConfig, ExtraPairs
from llm_from_scratch.data.datamodule import DataModule, build_data
from llm_from_scratch.paths import PathsConfig
from llm_from_scratch.tokenizer.config import TokenizerConfig
from llm_from_scratch.training.tokenizers import load_or_train_tokenizers


def build(cfg: DataConfig, paths: PathsConfig) -> DataModule:
    src_tok, tgt_tok = load_or_train_tokenizers(cfg, TokenizerConfig(vocab_size=400), paths)
    return build_data(cfg, src_tok, tgt_tok, paths)


def test_build_data_batches_decode_back_to_the_normalized_text(tiny_enja, tiny_paths):
    tiny_enja.cleaning.max_tokens, tiny_enja.cleaning.max_length_ratio = 64, 9.0
    tiny_enja.loading.batch_tokens = 512
    data = build(tiny_enja, tiny_paths)
    train = data.splits["train"]
    decoded = 0
    for batch in data.train_loader(epoch=0):
        assert batch.tgt_in[:, 0].eq(data.tgt_tok.bos_id).all()
        for row, index in enumerate(batch.indices.tolist()):
            src = batch.src[row][batch.src_mask[row]].tolist()
            tgt = batch.tgt_out[row][batch.tgt_mask[row]].tolist()
            assert src[-1] == data.src_tok.eos_id and tgt[-1] == data.tgt_tok.eos_id
            assert data.src_tok.decode(src[:-1]) == data.src_tok.normalize(train[index]["src"])
            assert data.tgt_tok.decode(tgt[:-1]) == data.tgt_tok.normalize(train[index]["tgt"])
            decoded += 1
    assert decoded == len(train) == 12
    assert "New York" in "".join(train["tgt"])  # detokenized, Latin spacing kept


@pytest.mark.slow  # over 5 s on 2 cores
def test_extra_train_pairs_join_the_train_split_but_not_the_tokenizers(
    tiny_enja, tiny_paths, tmp_path
):
    tiny_enja.cleaning.max_tokens, tiny_enja.cleaning.max_length_ratio = 64, 9.0
    tiny_enja.loading.batch_tokens = 512
    corpus_only = build(
        tiny_enja, dataclasses.replace(tiny_paths, tokenizer_dir=str(tmp_path / "a"))
    )
    paths = dataclasses.replace(tiny_paths, tokenizer_dir=str(tmp_path / "b"))  # trained afresh
    (tmp_path / "extra.en").write_text("i like green tea .\nzyx wvu .\n")
    (tmp_path / "extra.ja").write_text("緑茶 が 好き 。\n鬱 鬱 。\n")
    tiny_enja.extra_train = [ExtraPairs(str(tmp_path / "extra.en"), str(tmp_path / "extra.ja"))]
    with_extra = build(tiny_enja, paths)
    assert with_extra.src_tok.hash == corpus_only.src_tok.hash
    assert with_extra.tgt_tok.hash == corpus_only.tgt_tok.hash
    train = with_extra.splits["train"]
    assert list(train["tgt"][-2:]) == ["緑茶が好き。", "鬱鬱。"]
    assert train["tgt"][:12] == corpus_only.splits["train"]["tgt"]
    for split in ("dev", "test"):
        assert with_extra.splits[split]["tgt"] == corpus_only.splits[split]["tgt"]
    # Rewriting an extra file (new teacher translations) must not reuse the tokenized cache.
    (tmp_path / "extra.ja").write_text("緑茶 が 好き だ 。\n鬱 だ 。\n")
    assert list(build(tiny_enja, paths).splits["train"]["tgt"][-2:]) == [
        "緑茶が好きだ。",
        "鬱だ。",
    ]


def test_the_bpe_tokenizer_encodes_the_same_in_every_process(tiny_enja, tiny_paths, monkeypatch):
    src_tok, tgt_tok = load_or_train_tokenizers(
        tiny_enja, TokenizerConfig(vocab_size=400), tiny_paths
    )
    raw = datasets.Dataset.from_dict(
        {"src": ["Hello there.", "New York is big."] * 8, "tgt": ["こんにちは。", "大きい。"] * 8}
    )
    monkeypatch.setattr(cleaning, "MIN_PAIRS_PER_PROCESS", 4)
    single = cleaning.tokenize(raw, src_tok, tgt_tok, num_proc=1).to_dict()
    assert cleaning.tokenize(raw, src_tok, tgt_tok, num_proc=2).to_dict() == single
    assert single["src_ids"][0] == src_tok.encode("Hello there.")
