"""BPETokenizer: golden merges, equivalence with naive BPE, exact round trips, special tokens."""

from __future__ import annotations

import itertools
import json
import re
import tracemalloc
import unicodedata
from collections import Counter
from functools import cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_from_scratch.errors import ConfigError
from llm_from_scratch.tokenizer import bpe as bpe_module
from llm_from_scratch.tokenizer.bpe import NUM_BYTES, BPETokenizer
from llm_from_scratch.tokenizer.bpe_training import learn_merges
from llm_from_scratch.tokenizer.file_format import TokenizerError
from llm_from_scratch.tokenizer.pretokenize import SHIPPED_PATTERNS
from llm_from_scratch.tokenizer.special_tokens import BOS, EOS, PAD
from tests.tokenizer.reference_bpe import naive_encode, naive_merges

ANY_STR = st.text(st.characters(blacklist_categories=()))  # surrogates and controls too
SAMPLE = [
    "I believe in you. 君を信じているからね。",
    "The train was so crowded that I was kept standing all the way.",
    "汽車は込んでいて、私はずっと立ち通しだった。",
    "If anything should be wrong with my car, I would go by bus.",
    "万一車の調子が悪かったら、私はバスで行きます。",
    "Ｆｕｌｌ-width ｶﾀｶﾅ and 1998年, tabs\tand\nnewlines   and emoji 👨‍👩‍👧 café.",
] * 3


@cache
def sample_tokenizer(normalization: str) -> BPETokenizer:
    return BPETokenizer.train(SAMPLE, 400, character_coverage=0.98, normalization=normalization)


def test_golden_merges_worked_out_by_hand() -> None:
    # Pieces: "hug" and " pug". Alphabet in code point order: " " g h p u.
    # Pair counts: (u,g)=2, all others 1 -> merge u+g first. Then (h,ug), (" ",p), (p,ug) all
    # count 1: the tie goes to the smallest ids, " "+p; then h+ug (h < " p"); then " p"+ug.
    tok = BPETokenizer.train(["hug pug"], 1000, character_coverage=1.0, normalization="none")
    assert tok.merges == [("u", "g"), (" ", "p"), ("h", "ug"), (" p", "ug")]
    assert tok.alphabet == [" ", "g", "h", "p", "u"]
    # 3 special + 256 byte + 5 character tokens, then one per merge: the corpus ran out of pairs.
    assert tok.vocab_size == 3 + NUM_BYTES + 5 + 4
    first_merge = 3 + NUM_BYTES + 5
    assert tok.encode("hug pug") == [first_merge + 2, first_merge + 3]
    assert tok.encode("pug") == [3 + NUM_BYTES + 3, first_merge]  # "p", "ug"


def test_frequency_decides_before_id_order() -> None:
    # Pieces "cd", " cd", " cd", " ab": (c,d)=3 beats (a,b)=1 despite a's smaller id; then
    # (" ",cd)=2 beats the pairs of " ab".
    tok = BPETokenizer.train(["cd cd cd ab"], 1000, character_coverage=1.0)
    assert tok.merges[:2] == [("c", "d"), (" ", "cd")]


@settings(max_examples=200, deadline=None)
@given(
    words=st.dictionaries(
        st.lists(st.integers(0, 5), min_size=1, max_size=8).map(tuple),
        st.integers(1, 20),
        max_size=30,
    ),
    num_merges=st.integers(0, 40),
)
def test_incremental_training_matches_naive_bpe(words: dict, num_merges: int) -> None:
    corpus = Counter(words)
    assert learn_merges(corpus, num_merges, first_id=6) == naive_merges(corpus, num_merges, 6)


def naive_tokenizer_encode(tok: BPETokenizer, text: str) -> list[int]:
    """Encode piece by piece, applying every merge in order to the piece's character ids."""
    first_merge = len(tok.special_tokens) + NUM_BYTES + len(tok.alphabet)
    ids = []
    for piece in re.findall(tok.pattern, tok.normalize(text)):
        chars = [token for char in piece for token in tok.encode(char)]
        ids += naive_encode(chars, tok.merge_pairs, first_merge)
    return ids


def test_encode_replays_the_merges_in_training_order() -> None:
    tok = sample_tokenizer("none")
    for text in SAMPLE:
        assert tok.encode(text) == naive_tokenizer_encode(tok, text)


@settings(max_examples=100, deadline=None)
@given(
    corpus=st.lists(st.text("aab ", max_size=12), min_size=1, max_size=8),
    probe=st.text("aabc ", max_size=24),  # "c" is outside the alphabet: byte fallback
)
def test_encode_replays_the_merges_on_repetitive_text(corpus: list[str], probe: str) -> None:
    tok = BPETokenizer.train(corpus, 1000, character_coverage=1.0, normalization="none")
    assert tok.encode(probe) == naive_tokenizer_encode(tok, probe)


def test_encodings_stay_right_as_the_piece_cache_evicts(monkeypatch) -> None:
    monkeypatch.setattr(bpe_module, "MAX_CACHED_PIECES", 3)
    tok = BPETokenizer.from_json(sample_tokenizer("none").to_json())  # an empty cache
    for text in SAMPLE * 2:  # the second pass meets pieces evicted in the first
        assert tok.encode(text) == naive_tokenizer_encode(tok, text)


def test_memory_stays_bounded_however_many_distinct_pieces_are_encoded(monkeypatch) -> None:
    """A server encodes unbounded input: past `MAX_CACHED_PIECES` the cache starts afresh."""
    words = [" " + "".join(letters) for letters in itertools.product("abcdefgh", repeat=4)]

    def growth(cached_pieces: int) -> int:
        monkeypatch.setattr(bpe_module, "MAX_CACHED_PIECES", cached_pieces)
        tok = BPETokenizer.from_json(sample_tokenizer("none").to_json())  # an empty cache
        tracemalloc.start()
        try:
            for word in words:
                tok.encode(word)
            return tracemalloc.get_traced_memory()[0]
        finally:
            tracemalloc.stop()

    assert growth(100) * 10 < growth(len(words))


@given(text=ANY_STR)
def test_round_trip_is_exact_without_normalization(text: str) -> None:
    tok = sample_tokenizer("none")
    assert tok.decode(tok.encode(text)) == text


@given(text=ANY_STR)
def test_round_trip_gives_nfkc_with_normalization(text: str) -> None:
    tok = sample_tokenizer("nfkc")
    assert (
        tok.decode(tok.encode(text)) == unicodedata.normalize("NFKC", text) == tok.normalize(text)
    )


@pytest.mark.parametrize(
    "text",
    [
        "",
        " ",
        "\t\ttab\n\nnewline\r\n",
        "many     spaces   ",
        "👨‍👩‍👧‍👦 🏳️‍🌈 👍🏽",
        "e\u0301 a\u0308\u0323 ﾊﾟ",
        "\x00\x07\x1b[0m\x7f\u200b\u2028",
        "lone \ud800 surrogate",
        "<pad><bos><eos>",
    ],
)
def test_round_trip_edge_cases(text: str) -> None:
    tok = sample_tokenizer("none")
    ids = tok.encode(text)
    assert tok.decode(ids) == text
    assert all(len(tok.special_tokens) <= i < tok.vocab_size for i in ids)


def test_rare_characters_fall_back_to_their_utf8_bytes() -> None:
    tok = sample_tokenizer("none")
    assert "€" not in tok.alphabet
    assert [tok.token_text(i) for i in tok.encode("€")] == ["<0xE2>", "<0x82>", "<0xAC>"]
    assert all(tok.is_byte_token(i) for i in tok.encode("€"))


def test_invalid_utf8_decodes_with_replacement_characters() -> None:
    tok = sample_tokenizer("none")
    euro = tok.encode("€")
    assert tok.decode(euro[:2]) == "\ufffd"
    assert tok.decode([*euro[1:], *tok.encode("ok")]) == "\ufffd\ufffdok"


def test_decode_rejects_ids_outside_the_vocabulary() -> None:
    tok = sample_tokenizer("none")
    with pytest.raises(ValueError, match=f"token id {tok.vocab_size} is outside"):
        tok.decode([5, tok.vocab_size])
    with pytest.raises(ValueError, match="token id -1 is outside"):
        tok.decode([5, -1])


def test_special_tokens_come_first_and_never_come_from_text() -> None:
    tok = BPETokenizer.train(SAMPLE, 400, special_tokens=["<sep>", "<2ja>"])
    assert (tok.pad_id, tok.bos_id, tok.eos_id) == (0, 1, 2)
    assert tok.special_tokens == [PAD, BOS, EOS, "<sep>", "<2ja>"]
    assert tok.special_id("<2ja>") == 4
    ids = tok.encode("<eos> <sep> <2ja>")
    assert not set(ids) & set(range(len(tok.special_tokens)))
    text_ids = tok.encode("hi")
    assert tok.decode([tok.bos_id, *text_ids, tok.special_id("<sep>"), tok.eos_id, 0]) == "hi"


def test_required_characters_join_the_alphabet_however_rare() -> None:
    rare = "\ue001"  # once in the text: below any coverage's cut
    texts = [*SAMPLE, f"a {rare} b"]
    assert len(BPETokenizer.train(texts, 400, character_coverage=0.99).encode(rare)) == 3
    tok = BPETokenizer.train(
        texts, 400, character_coverage=0.99, required_characters=[rare, "\ue002"]
    )
    assert len(tok.encode(rare)) == len(tok.encode("\ue002")) == 1  # a token, not 3 bytes
    assert tok.decode(tok.encode(f"x{rare}y")) == f"x{rare}y"


def test_user_special_tokens_are_validated() -> None:
    with pytest.raises(ConfigError, match="'<eos>' is reserved"):
        BPETokenizer.train(SAMPLE, 400, special_tokens=["<eos>"])
    with pytest.raises(ConfigError, match="repeats"):
        BPETokenizer.train(SAMPLE, 400, special_tokens=["<x>", "<x>"])


def test_vocab_size_is_reached_when_the_corpus_has_enough_pairs() -> None:
    assert sample_tokenizer("nfkc").vocab_size == 400


def test_too_small_vocabulary_for_the_alphabet_is_a_clear_error() -> None:
    with pytest.raises(TokenizerError, match="cannot hold the 77 characters"):
        BPETokenizer.train([chr(0x4E00 + i) for i in range(77)], 300, character_coverage=1.0)


def test_training_is_deterministic() -> None:
    again = BPETokenizer.train(SAMPLE, 400, character_coverage=0.98, normalization="none")
    assert again.hash == sample_tokenizer("none").hash


def test_encode_batch_is_encode_per_text() -> None:
    tok = sample_tokenizer("nfkc")
    assert tok.encode_batch(SAMPLE[:4]) == [tok.encode(text) for text in SAMPLE[:4]]


NUMBERS = [
    f"It cost {n * 37:,} yen in {1990 + n % 30}. それは{n * 37}円で、１９９５年の{n}番だった。"
    for n in range(1, 400)
]


def test_digits_are_never_merged_however_often_numbers_repeat() -> None:
    tok = BPETokenizer.train(NUMBERS, 600, normalization="none")
    with_digits = [
        tok.token_text(i)
        for i in range(len(tok.special_tokens), tok.vocab_size)
        if not tok.is_byte_token(i) and any(char.isdigit() for char in tok.token_text(i))
    ]
    assert sorted(with_digits) == sorted(set("0123456789１９５"))  # each digit alone
    assert len(tok.merges) >= 10  # it did learn merges, of everything else
    for text in ("I was born in 1995.", "この本は１，２００円です。", "3.14 and 1,000,000"):
        assert tok.decode(tok.encode(text)) == text
    assert [tok.token_text(i) for i in tok.encode(" 2024年")][:5] == [" ", "2", "0", "2", "4"]


@pytest.mark.parametrize(
    ("version", "pieces"), [(1, [" ", "19", "9", "5"]), (2, [" ", "1", "9", "9", "5"])]
)
def test_a_file_keeps_encoding_numbers_with_its_own_pattern(version: int, pieces: list) -> None:
    """A file encodes numbers with the pattern it stores: version 1's keeps a digit merge,
    version 2's writes each digit alone."""
    tok = BPETokenizer.train(NUMBERS, 600, normalization="none")
    one, nine = (tok.encode(digit)[0] for digit in "19")
    data = json.loads(tok.to_json())
    data["merges"].append([one, nine])
    data["pretokenizer"]["pattern"] = SHIPPED_PATTERNS["okurigana", version]
    loaded = BPETokenizer.from_json(json.dumps(data))
    assert [loaded.token_text(i) for i in loaded.encode(" in 1995")][1:] == pieces
    assert loaded.decode(loaded.encode(" in 1995")) == " in 1995"
