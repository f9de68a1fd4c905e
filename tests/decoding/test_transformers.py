"""The transformers export: tiny models exported, then run by stock transformers classes.

The exported model must compute our logits (float32, to rounding), greedy search must give our
tokens, and beam search without a length penalty our best hypothesis; the exported tokenizer must
give our ids for every text, hostile ones included; the folder must read back into our model.
Skipped where the `export` extra (transformers) is not installed.
"""

from __future__ import annotations

import copy
import json
import math
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_from_scratch.checkpoint import (
    inference_state,
    load_checkpoint,
    restore_for_inference,
    save_checkpoint,
)
from llm_from_scratch.decoding.batched import decode_pieces
from llm_from_scratch.decoding.config import DecodingConfig
from llm_from_scratch.decoding.translator import Translator
from llm_from_scratch.export import hub, transformers_model
from llm_from_scratch.export.length_penalty import TYPICAL_OUTPUT_TOKENS, length_penalty_beta
from llm_from_scratch.export.model_card import license_of, model_card
from llm_from_scratch.export.transformers_model import (
    INSTALL_HINT,
    MANIFEST,
    Layout,
    TransformersExportError,
    export_to_transformers,
    pretrained_state,
)
from llm_from_scratch.export.transformers_tokenizer import (
    TokenizerExportError,
    build_tokenizer,
    vocabulary,
)
from llm_from_scratch.model.transformer import Seq2SeqTransformer
from llm_from_scratch.programs import export as export_program
from llm_from_scratch.programs.train import TrainConfig
from llm_from_scratch.tokenizer.bpe import BPETokenizer
from tests.composing import composed_train
from tests.decoding.builders import TINY, pad_batch, random_sources

ENGLISH = (
    "The train was so crowded that I was kept standing all the way.",
    "If anything should be wrong with my car, I would go by bus.",
    "Ｆｕｌｌ-width ｶﾀｶﾅ and 1998, tabs\tand newlines and café.",
    "I'm sorry I'm late. Don't worry, it's 3:00 p.m.",
)
JAPANESE = (
    "汽車は込んでいて、私はずっと立ち通しだった。",
    "万一車の調子が悪かったら、私はバスで行きます。",
    "遅れてごめんなさい。１９９５年に生まれた？",
)
# tests/tokenizer/test_bpe.py's edge cases but its lone surrogate: not text, which a Rust string
# cannot hold (the translator refuses it before any tokenizer sees it).
HOSTILE = (
    "",
    " ",
    "\t\ttab\n\nnewline\r\n",
    "many     spaces   ",
    "👨‍👩‍👧‍👦 🏳️‍🌈 👍🏽",
    "e\u0301 a\u0308\u0323 ﾊﾟ",
    "\x00\x07\x1b[0m\x7f\u200b\u2028",
    "\x1c\x1d\x1e\x1f separators Python calls spaces",
    "<pad><bos><eos> typed, not special",
    "㋿ 𐞁 🯱🯲 newer NFKC forms",
)
TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)
# float32 logits of the same sums taken in another order (attention, LayerNorm and matrix
# products): each of the few hundred roundings of 2^-24 on the way to a logit of this tiny model
# moves it by at most that much of its scale.
LOGIT_TOLERANCE = 300 * 2**-24


def tokenizers() -> tuple[BPETokenizer, BPETokenizer]:
    src = BPETokenizer.train(list(ENGLISH) * 3, 320, normalization="nfkc")
    tgt = BPETokenizer.train(list(JAPANESE) * 3, 320, normalization="none")
    return src, tgt


def run_config(**model: Any) -> TrainConfig:
    config = composed_train("decoding=greedy")
    config.model = TINY.__class__(**{**TINY.__dict__, **model})
    return config


def random_model(config: TrainConfig, src: BPETokenizer, tgt: BPETokenizer, shared=False):
    """Weights of a trained model's scale, so that outputs vary with the source."""
    torch.manual_seed(0)
    model = Seq2SeqTransformer(
        config.model, src.vocab_size, tgt.vocab_size, tgt.pad_id, shared_vocab=shared
    )
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.normal_(std=0.3)
    return model.eval()


def save_run(path: Path, model, src, tgt, config: TrainConfig) -> Path:
    state = inference_state(model, src, tgt, config)
    state.update(progress={"step": 60}, metrics={"bleu": 12.5})
    save_checkpoint(path, state)
    return path


@pytest.fixture(scope="module")
def transformers():
    return pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def separate(tmp_path_factory, transformers) -> dict[str, Any]:
    """The default's shape: separate vocabularies, pre-LN, tied decoder embeddings."""
    src, tgt = tokenizers()
    config = run_config()
    model = random_model(config, src, tgt)
    checkpoint = save_run(tmp_path_factory.mktemp("run") / "averaged.pt", model, src, tgt, config)
    folder = export_to_transformers(checkpoint, checkpoint.parent / "transformers", run="tiny")
    return {"model": model, "src": src, "tgt": tgt, "checkpoint": checkpoint, "folder": folder}


@pytest.fixture(scope="module")
def copy_export(tmp_path_factory, transformers, copy_model, tokenizer) -> dict[str, Any]:
    """The trained copy model (its outputs end with EOS at varied lengths), float32: a copy, as
    `Module.float` converts in place and the session's model stays float64 for other tests."""
    model = copy.deepcopy(copy_model).float()
    checkpoint = save_run(
        tmp_path_factory.mktemp("copy") / "averaged.pt", model, tokenizer, tokenizer, run_config()
    )
    folder = export_to_transformers(checkpoint, checkpoint.parent / "transformers").directory
    layout = Layout.of(tokenizer, tokenizer, shared=False)
    return {"model": model, "tok": tokenizer, "folder": folder, "offset": layout.offset}


def hf_search(folder: Path, pieces: list[list[int]], eos_id: int, offset: int, **generate):
    """transformers' outputs for our source ids (EOS appended), as our target ids, and whether
    each stopped without EOS."""
    from transformers import AutoModelForSeq2SeqLM

    model = AutoModelForSeq2SeqLM.from_pretrained(folder).eval()
    src, mask = pad_batch([[*piece, eos_id] for piece in pieces], 0)
    with torch.no_grad():
        rows = model.generate(input_ids=src, attention_mask=mask.long(), **generate)
    outputs = []
    for row in rows[:, 1:].tolist():
        ended = offset + eos_id in row
        tokens = row[: row.index(offset + eos_id)] if ended else row
        outputs.append(([token - offset for token in tokens if token != 0], not ended))
    return outputs


def ours(model, tok_src, tok_tgt, pieces, **decoding):
    cfg = DecodingConfig(precision="fp32", max_len_a=0, **decoding)
    return [
        (n[0].tokens, n[0].hit_max_len) for n in decode_pieces(model, pieces, tok_src, tok_tgt, cfg)
    ]


@pytest.mark.parametrize(
    ("norm_first", "tied", "shared"),
    [
        (True, True, False),
        pytest.param(True, False, False, marks=pytest.mark.slow),
        pytest.param(False, True, False, marks=pytest.mark.slow),
        pytest.param(True, True, True, marks=pytest.mark.slow),
    ],
    ids=["pegasus", "untied", "marian", "shared"],
)
def test_the_exported_model_computes_our_logits(tmp_path, transformers, norm_first, tied, shared):
    src, tgt = tokenizers()
    if shared:  # one vocabulary of both languages
        src = tgt = BPETokenizer.train(list(ENGLISH + JAPANESE) * 3, 500)
    config = run_config(norm_first=norm_first, tie_embeddings=tied)
    config.tokenizer.shared = shared
    config.tokenizer.target_normalization = src.normalization if shared else "none"
    model = random_model(config, src, tgt, shared)
    checkpoint = save_run(tmp_path / "averaged.pt", model, src, tgt, config)
    exported = export_to_transformers(checkpoint, tmp_path / "hf")
    assert exported.model_class == (
        "PegasusForConditionalGeneration" if norm_first else "MarianMTModel"
    )
    hf = transformers.AutoModelForSeq2SeqLM.from_pretrained(exported.directory).eval()
    assert type(hf).__name__ == exported.model_class
    offset = Layout.of(src, tgt, shared).offset
    sources = [[*src.encode(text), src.eos_id] for text in ENGLISH]
    targets = [[tgt.bos_id, *tgt.encode(text)] for text in JAPANESE + JAPANESE[:1]]
    source, source_mask = pad_batch(sources, src.pad_id)
    target, _ = pad_batch(targets, tgt.pad_id)
    with torch.no_grad():
        expected = model(source, source_mask, target)
        logits = hf(
            input_ids=source, attention_mask=source_mask.long(), decoder_input_ids=target + offset
        ).logits
    scale = expected.abs().max().item()
    assert torch.allclose(logits[..., offset:], expected, rtol=0, atol=LOGIT_TOLERANCE * scale)
    # No source token can be an output: it takes no probability.
    assert torch.all(logits[..., :offset] == float("-inf"))
    # Read back: our model, exactly.
    back, *_ = restore_for_inference(pretrained_state(exported.directory))
    for name, tensor in model.state_dict().items():
        assert torch.equal(back.state_dict()[name], tensor), name


@pytest.mark.parametrize("no_repeat", [0, 3])
def test_greedy_search_gives_our_tokens(copy_export, no_repeat):
    tok, model = copy_export["tok"], copy_export["model"]
    pieces = [s[:-1] for s in random_sources(tok, 60, torch.Generator().manual_seed(3))]
    expected = ours(
        model, tok, tok, pieces, beam_size=1, max_len_b=12, no_repeat_ngram_size=no_repeat,
        no_repeat_spares_numbers=False,
    )  # fmt: skip
    got = hf_search(
        copy_export["folder"], pieces, tok.eos_id, copy_export["offset"],
        num_beams=1, max_new_tokens=12, no_repeat_ngram_size=no_repeat,
    )  # fmt: skip
    assert any(hit for _, hit in expected) and not all(hit for _, hit in expected)
    assert got == expected


def test_greedy_search_gives_our_tokens_with_separate_vocabularies(separate):
    src, tgt, model = separate["src"], separate["tgt"], separate["model"]
    pieces = [src.encode(text) for text in ENGLISH + HOSTILE if src.encode(text)]
    expected = ours(model, src, tgt, pieces, beam_size=1, max_len_b=16, no_repeat_ngram_size=0)
    got = hf_search(
        separate["folder"].directory, pieces, src.eos_id, src.vocab_size,
        num_beams=1, max_new_tokens=16, no_repeat_ngram_size=0,
    )  # fmt: skip
    assert got == expected


def test_beam_search_without_a_length_penalty_finds_our_best(copy_export):
    """Both searches keep the beam's best candidates and end a hypothesis at EOS among the top
    beam; with no length penalty both return the highest log-probability they found."""
    tok, model = copy_export["tok"], copy_export["model"]
    pieces = [s[:-1] for s in random_sources(tok, 60, torch.Generator().manual_seed(4))]
    expected = ours(
        model, tok, tok, pieces, beam_size=4, length_penalty=0.0, max_len_b=12,
        no_repeat_ngram_size=0,
    )  # fmt: skip
    got = hf_search(
        copy_export["folder"], pieces, tok.eos_id, copy_export["offset"],
        num_beams=4, length_penalty=0.0, early_stopping="never", max_new_tokens=12,
        no_repeat_ngram_size=0,
    )  # fmt: skip
    assert got == expected


def test_the_tokenizer_gives_our_ids(separate, transformers):
    src = separate["src"]
    hf = transformers.AutoTokenizer.from_pretrained(separate["folder"].directory)
    for text in ENGLISH + JAPANESE + HOSTILE:
        assert hf(text).input_ids == [*src.encode(text), src.eos_id], repr(text)
        assert hf(text, add_special_tokens=False).input_ids == src.encode(text)
    batch = hf(list(ENGLISH[:2]), padding=True)
    assert batch.input_ids[1][-1] == src.pad_id or batch.input_ids[0][-1] == src.pad_id


@settings(max_examples=100, deadline=None)
@given(text=TEXT)
def test_the_tokenizer_gives_our_ids_for_any_text(text):
    for tok in tokenizers():  # NFKC and none
        exported = _tokenizer_of(tok)
        assert exported.encode(text).ids == [*tok.encode(text), tok.eos_id]


_TOKENIZERS: dict[str, Any] = {}


def _tokenizer_of(tok: BPETokenizer) -> Any:
    pytest.importorskip("tokenizers")
    if tok.hash not in _TOKENIZERS:
        _TOKENIZERS[tok.hash] = build_tokenizer(tok, tok, shared=True)
    return _TOKENIZERS[tok.hash]


def test_the_tokenizer_decodes_our_target_ids(separate, transformers):
    src, tgt = separate["src"], separate["tgt"]
    hf = transformers.AutoTokenizer.from_pretrained(separate["folder"].directory)
    offset = src.vocab_size
    for text in JAPANESE + HOSTILE:
        ids = [tgt.bos_id, *tgt.encode(text), tgt.eos_id, tgt.pad_id]
        assert hf.decode([offset + i for i in ids], skip_special_tokens=True) == tgt.decode(ids)


def test_the_folder_loads_without_custom_code(separate, transformers):
    folder = separate["folder"].directory
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    assert "auto_map" not in config
    tokenizer_config = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    assert tokenizer_config["tokenizer_class"] == "PreTrainedTokenizerFast"  # 4 and 5 know it
    assert {path.name for path in folder.iterdir()} >= {
        "config.json", "model.safetensors", "generation_config.json", "tokenizer.json",
        "README.md", MANIFEST,
    }  # fmt: skip


def test_the_generation_config_holds_the_runs_search(separate, transformers):
    src, tgt = separate["src"], separate["tgt"]
    layout = Layout.of(src, tgt, shared=False)
    decoding = {"beam_size": 5, "length_penalty": 1.5, "no_repeat_ngram_size": 3}
    settings = transformers_model.generation_settings(decoding, TINY, layout, tgt)
    generation = transformers.GenerationConfig(**settings)
    offset = src.vocab_size
    assert generation.num_beams == 5
    assert generation.no_repeat_ngram_size == 3
    assert generation.length_penalty == pytest.approx(length_penalty_beta(1.5))
    assert generation.max_length == TINY.max_positions + 1
    assert generation.decoder_start_token_id == offset + tgt.bos_id
    assert generation.eos_token_id == offset + tgt.eos_id
    assert sorted(generation.suppress_tokens) == sorted([offset + tgt.bos_id, offset + tgt.pad_id])
    # What the export wrote: the run's greedy search.
    saved = transformers.GenerationConfig.from_pretrained(separate["folder"].directory)
    assert (saved.num_beams, saved.eos_token_id) == (1, offset + tgt.eos_id)


def test_the_length_penalty_grows_as_gnmts_at_the_typical_length():
    alpha, length = 1.5, TYPICAL_OUTPUT_TOKENS

    def slope(penalty, at: float) -> float:
        return (math.log(penalty(at + 1e-3)) - math.log(penalty(at - 1e-3))) / 2e-3

    beta = length_penalty_beta(alpha)
    assert slope(lambda n: n**beta, length) == pytest.approx(
        slope(lambda n: ((5 + n) / 6) ** alpha, length), rel=1e-6
    )


def test_text_in_text_out_searches_as_we_do(separate, transformers):
    """Tokenizer then generate, as a pipeline runs them, give our tokens for our texts."""
    src, tgt, model = separate["src"], separate["tgt"], separate["model"]
    folder = separate["folder"].directory
    hf_tok = transformers.AutoTokenizer.from_pretrained(folder)
    hf_model = transformers.AutoModelForSeq2SeqLM.from_pretrained(folder).eval()
    batch = hf_tok(list(ENGLISH), return_tensors="pt", padding=True)
    with torch.no_grad():
        rows = hf_model.generate(**batch, num_beams=1, max_new_tokens=10, no_repeat_ngram_size=0)
    pieces = [src.encode(text) for text in ENGLISH]
    expected = ours(model, src, tgt, pieces, beam_size=1, max_len_b=10, no_repeat_ngram_size=0)
    assert [[i - src.vocab_size for i in row[1:]] for row in rows.tolist()] == [
        tokens for tokens, _ in expected
    ]


def test_bytes_that_are_no_utf8_decode_to_one_replacement_each(separate, transformers):
    """Where the model's byte tokens spell no character, `tokenizers` writes U+FFFD for each
    byte of the run, where Python's decoder keeps the run's valid characters: the one way the
    two decodings differ."""
    src, tgt = separate["src"], separate["tgt"]
    hf = transformers.AutoTokenizer.from_pretrained(separate["folder"].directory)
    slash, stray = (tgt.special_tokens.__len__() + byte for byte in (0x2F, 0xC1))
    assert tgt.decode([slash, stray]) == "/\ufffd"
    assert hf.decode([src.vocab_size + slash, src.vocab_size + stray]) == "\ufffd\ufffd"
    assert hf.decode([src.vocab_size + slash]) == "/"


def test_the_translation_pipeline_runs_it(separate, transformers):
    if int(transformers.__version__.split(".")[0]) >= 5:
        pytest.skip("transformers 5 removed the translation pipeline")
    translate = transformers.pipeline("translation", model=str(separate["folder"].directory))
    assert len(translate(list(ENGLISH[:2]), max_new_tokens=5)) == 2


def test_translator_from_pretrained_translates_as_the_checkpoint(separate):
    texts = [*ENGLISH, "", "Hello. How are you?"]
    expected = Translator.from_checkpoint(separate["checkpoint"], "cpu", precision="fp32")
    loaded = Translator.from_pretrained(separate["folder"].directory, "cpu", precision="fp32")
    assert [t.text for t in loaded.translate(texts)] == [t.text for t in expected.translate(texts)]
    assert loaded.checkpoints[0].step == 60


def test_weights_changed_with_transformers_come_back(separate, transformers, tmp_path):
    """A folder fine-tuned and saved again by transformers reads back into our model, which then
    computes the changed model's logits."""
    folder = Path(shutil.copytree(separate["folder"].directory, tmp_path / "tuned"))
    hf = transformers.AutoModelForSeq2SeqLM.from_pretrained(folder).eval()
    with torch.no_grad():
        hf.model.decoder.layers[0].fc2.bias.add_(0.5)
        hf.model.shared.weight[separate["src"].vocab_size + 300].mul_(2.0)
    hf.save_pretrained(folder)
    src, tgt = separate["src"], separate["tgt"]
    model, *_ = restore_for_inference(pretrained_state(folder))
    source = torch.tensor([[*src.encode(ENGLISH[0]), src.eos_id]])
    target = torch.tensor([[tgt.bos_id, 300, *tgt.encode(JAPANESE[0])]])
    with torch.no_grad():
        expected = hf(input_ids=source, decoder_input_ids=target + src.vocab_size).logits
        logits = model(source, source != src.pad_id, target)
    scale = logits.abs().max().item()
    assert torch.allclose(expected[..., src.vocab_size :], logits, atol=LOGIT_TOLERANCE * scale)


def test_the_model_card_has_the_hubs_metadata(separate):
    manifest = json.loads((separate["folder"].directory / MANIFEST).read_text(encoding="utf-8"))
    manifest["config"]["data"].update(name="small_parallel_enja", mixture={})  # one license
    signature = "nrefs:1|case:mixed|eff:no|tok:ja-mecab-0.996-IPA|smooth:exp|version:2.5.1"
    chrf = "nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:2.5.1"
    metrics = {
        "sentences": 2,
        "bleu": 34.567,
        "bleu_signature": signature,
        "chrf": 40.0,
        "chrf_signature": chrf,
    }
    card = model_card(manifest, metrics, 123_456, "someone/tiny")
    metadata = yaml.safe_load(card.split("---")[1])
    assert metadata["language"] == ["en", "ja"]
    assert metadata["pipeline_tag"] == "translation"
    assert metadata["datasets"] == ["small_parallel_enja"]
    assert metadata["license"] == "cc-by-4.0"
    result = metadata["model-index"][0]["results"][0]
    assert result["metrics"][0] == {
        "type": "bleu",
        "value": 34.57,
        "name": "BLEU",
        "args": signature,
    }
    assert 'from_pretrained("someone/tiny")' in card
    assert "number repair" in card and "translates what it is given" in card
    assert f"`{signature}`" in card


def test_the_export_card_carries_the_scores_beside_the_checkpoint(separate, tmp_path):
    run = Path(shutil.copytree(separate["checkpoint"].parent, tmp_path / "run", ignore=_exports))
    (run / "eval-test").mkdir()  # as evaluations were named before they named their settings
    config = load_checkpoint(run / "averaged.pt")["config"]
    metrics = {
        "checkpoint": str(run / "averaged.pt"),
        "dataset": config["data"]["name"],
        "split": "test",
        "decoding": config["decoding"],  # the search generation_config.json names
        "sentences": 1,
        "bleu": 1.0,
        "bleu_signature": "b",
        "chrf": 2.0,
        "chrf_signature": "c",
    }
    (run / "eval-test" / "metrics.json").write_text(json.dumps(metrics), encoding="utf-8")
    folder = export_to_transformers(run / "averaged.pt", run / "transformers").directory
    assert "model-index" in (folder / "README.md").read_text(encoding="utf-8")


def _exports(directory: str, names: list[str]) -> list[str]:
    return [name for name in names if name == "transformers"]


def test_a_mixture_of_attribution_and_share_alike_corpora_is_share_alike():
    assert license_of(["small_parallel_enja", "tanaka_graded"]) == "cc-by-sa-4.0"
    assert license_of(["tanaka_graded", "kyoto_wiki"]) == "other"
    assert license_of(["my_corpus"]) == "other"


def test_two_tokens_spelling_one_string_are_refused():
    # a b c, then ab, abc = ab+c, bc, and abc again = a+bc: BPE in `tokenizers` finds a token
    # by its string, so it could not tell the two "abc" apart.
    first = 3 + 256
    tok = BPETokenizer(
        alphabet=["a", "b", "c"],
        merges=[
            (first, first + 1),
            (first + 3, first + 2),
            (first + 1, first + 2),
            (first, first + 5),
        ],
    )
    with pytest.raises(TokenizerExportError, match=r"token 265 spells 'abc', as token 263"):
        vocabulary(tok, tok, shared=True)


def test_a_folder_that_is_no_export_is_refused(tmp_path):
    with pytest.raises(TransformersExportError, match="is not a transformers export"):
        pretrained_state(tmp_path)
    with pytest.raises(TransformersExportError, match="is not a transformers export"):
        Translator.from_pretrained(tmp_path)


def test_an_altered_tokenizer_is_refused(separate, tmp_path):
    folder = Path(shutil.copytree(separate["folder"].directory, tmp_path / "altered"))
    separate["tgt"].save(folder / "src_tokenizer.json")
    with pytest.raises(TransformersExportError, match="does not match the manifest's hash"):
        pretrained_state(folder)


def test_export_program_writes_the_folder(separate, tmp_path, capsys):
    output = tmp_path / "out"
    args = ["--checkpoint", str(separate["checkpoint"]), "--format", "transformers"]
    assert export_program.main([*args, "--output", str(output)]) == 0
    assert (output / "model.safetensors").is_file()
    assert "as PegasusForConditionalGeneration" in capsys.readouterr().err
    assert export_program.main([*args, "--output", str(output)]) == 0  # the same again
    assert f"{output} is up to date: it holds" in capsys.readouterr().err
    manifest = json.loads((output / "llm_from_scratch.json").read_text(encoding="utf-8"))
    manifest["source_sha256"] = "0" * 64  # the export of another checkpoint
    (output / "llm_from_scratch.json").write_text(json.dumps(manifest), encoding="utf-8")
    with pytest.raises(TransformersExportError, match="exists; remove it or pass --force"):
        export_program.main([*args, "--output", str(output)])
    with pytest.raises(Exception, match="--quantization is CTranslate2's"):
        export_program.main([*args, "--quantization", "int8", "--output", str(tmp_path / "q")])


class RecordingHub:
    """What `push_to_hub` asks of `huggingface_hub.HfApi`, recorded: no network."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def create_repo(self, repo_id: str, **options: Any) -> str:
        self.calls.append(("create_repo", {"repo_id": repo_id, **options}))
        return f"https://huggingface.co/{repo_id}"

    def upload_folder(self, **options: Any) -> None:
        self.calls.append(("upload_folder", options))


def test_push_to_hub_uploads_the_whole_folder(separate, tmp_path, monkeypatch, capsys):
    recording = RecordingHub()
    monkeypatch.setattr(hub, "hub_api", lambda: recording)
    output = tmp_path / "out"
    args = ["--checkpoint", str(separate["checkpoint"]), "--format", "transformers"]
    assert export_program.main([*args, "--output", str(output), "--push-to-hub", "me/tiny"]) == 0
    (create, created), (upload, uploaded) = recording.calls
    assert (create, created["repo_id"], created["exist_ok"]) == ("create_repo", "me/tiny", True)
    assert upload == "upload_folder"
    assert (uploaded["folder_path"], uploaded["repo_id"]) == (str(output), "me/tiny")
    assert "uploaded" in capsys.readouterr().err
    assert 'from_pretrained("me/tiny")' in (output / "README.md").read_text(encoding="utf-8")


def test_push_to_hub_refuses_what_it_cannot_upload(separate, tmp_path, monkeypatch):
    failing = RecordingHub()

    def refuse(**options: Any) -> None:
        raise PermissionError("401 Client Error: Unauthorized\nmore detail")

    failing.upload_folder = refuse  # type: ignore[method-assign]
    monkeypatch.setattr(hub, "hub_api", lambda: failing)
    folder = separate["folder"].directory
    with pytest.raises(hub.HubError, match="must name a repository as USER/NAME"):
        hub.push_to_hub(folder, "no-slash")
    with pytest.raises(
        hub.HubError, match=r"failed: PermissionError: 401 Client Error: Unauthorized$"
    ):
        hub.push_to_hub(folder, "me/tiny")
    with pytest.raises(Exception, match="add --format transformers"):
        export_program.main(["--checkpoint", str(separate["checkpoint"]), "--push-to-hub", "me/x"])


def test_without_transformers_the_error_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "transformers", None)
    with pytest.raises(
        TransformersExportError, match=INSTALL_HINT.replace("[", r"\[").replace(".", r"\.")
    ):
        transformers_model.import_transformers()
