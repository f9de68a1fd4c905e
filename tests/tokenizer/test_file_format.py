"""Saving and loading: identical ids after a round trip, clear errors for bad files."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from llm_from_scratch.tokenizer.bpe import BPETokenizer
from llm_from_scratch.tokenizer.file_format import TokenizerError
from llm_from_scratch.tokenizer.pretokenize import PRETOKENIZERS

TEXTS = ["The cat sat on the mat.", "猫がマットの上に座った。", "tabs\tand  spaces, ﾊﾝｶｸ"] * 4


@pytest.fixture(scope="module")
def tok() -> BPETokenizer:
    return BPETokenizer.train(TEXTS, 340, character_coverage=0.95, special_tokens=["<sep>"])


@pytest.fixture
def saved(tok: BPETokenizer, tmp_path: Path) -> Path:
    path = tmp_path / "nested" / "tok.json"
    tok.save(path)
    return path


def test_load_gives_identical_ids_and_hash(tok: BPETokenizer, saved: Path) -> None:
    loaded = BPETokenizer.load(saved)
    probe = [*TEXTS, "unseen text with rare chars: €ß🙂", "<sep>"]
    assert [loaded.encode(text) for text in probe] == [tok.encode(text) for text in probe]
    assert loaded.hash == tok.hash
    assert loaded.special_id("<sep>") == tok.special_id("<sep>")
    assert (loaded.vocab_size, loaded.merges) == (tok.vocab_size, tok.merges)


def test_hash_is_the_sha256_of_the_saved_file(tok: BPETokenizer, saved: Path) -> None:
    assert tok.hash == hashlib.sha256(saved.read_bytes()).hexdigest()


def test_different_tokenizers_have_different_hashes(tok: BPETokenizer) -> None:
    other = BPETokenizer.train(TEXTS, 339, character_coverage=0.95, special_tokens=["<sep>"])
    assert other.hash != tok.hash


def test_file_records_format_options_and_pattern(tok: BPETokenizer, saved: Path) -> None:
    data = json.loads(saved.read_text(encoding="utf-8"))
    assert (data["format"], data["version"]) == ("llm-from-scratch-bpe", 2)
    assert data["normalization"] == "nfkc"
    assert data["pretokenizer"] == {"name": "okurigana", "pattern": tok.pattern}
    assert data["training_options"] == {"vocab_size": 340, "character_coverage": 0.95}
    assert data["special_tokens"] == ["<pad>", "<bos>", "<eos>", "<sep>"]


def rewrite(path: Path, **changes: object) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    data.update(changes)
    path.write_text(json.dumps(data), encoding="utf-8")


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"version": 3}, "format version 3; this code reads versions 1, 2"),
        ({"version": True}, "format version True; this code reads versions 1, 2"),
        ({"word_counts": {"the": 1}}, '"word_counts" must map words to counts of at least 2'),
        ({"word_counts": ["the"]}, '"word_counts" must map words to counts'),
        ({"format": "sentencepiece"}, '"format" must be'),
        ({"normalization": "nfd"}, "unknown normalization 'nfd'"),
        ({"pretokenizer": {"name": "x", "pattern": "("}}, "'x' pre-tokenizer pattern is not one"),
        (  # a shipped pattern under another name
            {"pretokenizer": {"name": "script", "pattern": PRETOKENIZERS["okurigana"]}},
            "'script' pre-tokenizer pattern is not one this code has shipped",
        ),
        (  # catastrophic backtracking: never compiled, let alone run
            {"pretokenizer": {"name": "okurigana", "pattern": r"(?:a+)+b|\S+|\s+"}},
            "'okurigana' pre-tokenizer pattern is not one this code has shipped",
        ),
        ({"special_tokens": ["<bos>", "<pad>", "<eos>"]}, "starting with"),
        ({"alphabet": ["ab"]}, "single characters"),
        ({"alphabet": ["a", "a"]}, "lists a character twice"),
        ({"merges": [[0, 1]]}, "merge 0 is [0, 1]"),
        ({"merges": "none"}, "list of [id, id] pairs"),
    ],
)
def test_malformed_content_is_a_clear_error(saved: Path, changes: dict, message: str) -> None:
    rewrite(saved, **changes)
    with pytest.raises(TokenizerError, match=message.replace("[", r"\[").replace("(", r"\(")):
        BPETokenizer.load(saved)


def test_a_merge_may_not_use_a_later_token(saved: Path) -> None:
    data = json.loads(saved.read_text(encoding="utf-8"))
    last = len(data["special_tokens"]) + 256 + len(data["alphabet"]) + len(data["merges"]) - 1
    data["merges"][-1] = [last, last]  # refers to itself
    saved.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(TokenizerError, match=f"merge {len(data['merges']) - 1} is"):
        BPETokenizer.load(saved)


def test_word_counts_survive_a_round_trip(tok: BPETokenizer, saved: Path) -> None:
    # Every word of TEXTS occurs four times; `ﾊﾝｶｸ` (katakana, uncased) is no counted word.
    assert (tok.word_count("cat"), tok.word_count("The"), tok.word_count("THE")) == (4, 8, 8)
    assert (tok.word_count("ﾊﾝｶｸ"), tok.word_count("dog")) == (0, 0)
    loaded = BPETokenizer.load(saved)
    assert loaded.word_counts == tok.word_counts and loaded.word_count("the") == 8


def test_a_version_1_file_loads_without_word_counts_and_keeps_its_hash(
    tok: BPETokenizer, saved: Path
) -> None:
    data = json.loads(saved.read_text(encoding="utf-8"))
    del data["word_counts"]
    data["version"] = 1
    old_file = json.dumps(data, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    saved.write_text(old_file, encoding="utf-8")
    old = BPETokenizer.load(saved)
    assert old.word_count("cat") is None
    assert old.encode(TEXTS[0]) == tok.encode(TEXTS[0])
    # Written back byte for byte: the hash a checkpoint stored for it still matches.
    assert old.to_json() == old_file
    assert old.hash == hashlib.sha256(old_file.encode("utf-8")).hexdigest() != tok.hash


def test_a_version_2_file_needs_word_counts(saved: Path) -> None:
    data = json.loads(saved.read_text(encoding="utf-8"))
    del data["word_counts"]
    saved.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(TokenizerError, match="missing word_counts"):
        BPETokenizer.load(saved)


def test_missing_keys_are_named(saved: Path) -> None:
    data = json.loads(saved.read_text(encoding="utf-8"))
    del data["merges"], data["alphabet"]
    saved.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(TokenizerError, match="missing alphabet, merges"):
        BPETokenizer.load(saved)


@pytest.mark.parametrize("content", [b"{not json", b"\xff\xfe", b"[]", b"null"])
def test_not_a_tokenizer_file_is_a_clear_error(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    with pytest.raises(TokenizerError, match=str(path)):
        BPETokenizer.load(path)


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(TokenizerError, match="does not exist"):
        BPETokenizer.load(tmp_path / "absent.json")


def test_json_text_round_trip(tok: BPETokenizer) -> None:
    again = BPETokenizer.from_json(tok.to_json())
    assert again.hash == tok.hash
    assert again.encode(TEXTS[1]) == tok.encode(TEXTS[1])
    with pytest.raises(TokenizerError, match="checkpoint is not a tokenizer file"):
        BPETokenizer.from_json("{", origin="checkpoint")
