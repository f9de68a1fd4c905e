"""The CTranslate2 export: a tiny trained model exported, then decoded by both engines.

Greedy search, and beam search without a length penalty, are the same search in both engines,
so their outputs must agree sentence for sentence; CTranslate2's cross-attention must be the
torch model's. Skipped where the `export` extra (ctranslate2) is not installed.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import torch

from llm_from_scratch.checkpoint import inference_state, save_checkpoint
from llm_from_scratch.decoding import ctranslate2_engine
from llm_from_scratch.decoding.batched import decode_pieces
from llm_from_scratch.decoding.config import DecodingConfig
from llm_from_scratch.decoding.ctranslate2_engine import CTranslate2Model
from llm_from_scratch.decoding.torch_engine import teacher_forced_attention
from llm_from_scratch.decoding.translator import Translator
from llm_from_scratch.export.ctranslate2_model import (
    INSTALL_HINT,
    MANIFEST,
    TOKENIZER_FILES,
    export_checkpoint,
    import_ctranslate2,
)
from llm_from_scratch.export.formats import ExportError
from llm_from_scratch.model.transformer import Seq2SeqTransformer
from llm_from_scratch.programs import evaluate as evaluate_cli
from llm_from_scratch.programs import export as export_program
from llm_from_scratch.programs import translate as translate_cli
from llm_from_scratch.programs.model_choice import load_translator
from llm_from_scratch.serving.service import Search, TranslationService
from llm_from_scratch.tokenizer.bpe import BPETokenizer
from tests.composing import composed_train
from tests.decoding.builders import (
    TINY,
    answering,
    random_sources,
    tiny_tokenizer,
)

STEP, DEV_BLEU = 60, 12.5


@pytest.fixture(scope="module")
def model(copy_model: Seq2SeqTransformer) -> Seq2SeqTransformer:
    """The copy model in float32, the type CTranslate2 computes in."""
    return copy.deepcopy(copy_model).float()


@pytest.fixture(scope="module")
def checkpoint(
    tmp_path_factory: pytest.TempPathFactory, tokenizer: BPETokenizer, model: Seq2SeqTransformer
) -> Path:
    config = composed_train("decoding=greedy")
    config.model = TINY  # the copy model's
    state = inference_state(model, tokenizer, tokenizer, config)
    state.update(progress={"step": STEP}, metrics={"bleu": DEV_BLEU})
    path = tmp_path_factory.mktemp("run") / "averaged.pt"
    save_checkpoint(path, state)
    return path


@pytest.fixture(scope="module")
def exported(checkpoint: Path) -> Path:
    pytest.importorskip("ctranslate2")
    return export_checkpoint(checkpoint, checkpoint.parent / "ctranslate2", run="tiny").directory


@pytest.fixture(scope="module")
def pieces(tokenizer: BPETokenizer) -> list[list[int]]:
    sources = random_sources(tokenizer, 60, torch.Generator().manual_seed(3))
    return [source[:-1] for source in sources]  # without EOS, as the Translator gives them


# CTranslate2's beam search bans repeated n-grams by a rule of its own (it refused a third 10
# after "10 10" with n=3); its greedy search bans exactly as ours.
SAME_SEARCH = [(1, 0), (1, 3), (4, 0)]  # (beam_size, no_repeat_ngram_size)


@pytest.mark.parametrize(("beam_size", "no_repeat"), SAME_SEARCH)
def test_same_outputs_as_torch_without_length_penalty(
    exported: Path, model, tokenizer, pieces, beam_size: int, no_repeat: int
):
    cfg = DecodingConfig(
        beam_size=beam_size,
        length_penalty=0.0,
        precision="fp32",
        no_repeat_ngram_size=no_repeat,
    )
    expected = decode_pieces(model, pieces, tokenizer, tokenizer, cfg)
    engine = Translator.from_export(exported, device="cpu").model
    got = engine.decode_pieces(pieces, cfg)
    assert [[h.tokens for h in nbest] for nbest in got] == [
        [h.tokens for h in nbest] for nbest in expected
    ]
    assert [[h.hit_max_len for h in nbest] for nbest in got] == [
        [h.hit_max_len for h in nbest] for nbest in expected
    ]
    # Scores differ by BOS and PAD's small share: CTranslate2 removes them before the softmax.
    for got_nbest, expected_nbest in zip(got, expected, strict=True):
        for got_hyp, expected_hyp in zip(got_nbest, expected_nbest, strict=True):
            assert got_hyp.score == pytest.approx(expected_hyp.score, abs=0.05)


@pytest.mark.parametrize(
    ("beam_size", "no_repeat", "prefer_finished"),
    [*((*search, False) for search in SAME_SEARCH), (4, 0, True)],
)
def test_the_output_limit_is_the_torch_searches(
    exported: Path, model, tokenizer, pieces, beam_size: int, no_repeat: int, prefer_finished
):
    """A limit short enough to stop many sentences stops the same ones at the same token,
    though one CTranslate2 call decodes sources of several limits."""
    cfg = DecodingConfig(
        beam_size=beam_size,
        length_penalty=0.0,
        max_len_a=0.5,
        max_len_b=2,
        precision="fp32",
        no_repeat_ngram_size=no_repeat,
        prefer_finished=prefer_finished,
    )
    expected = decode_pieces(model, pieces, tokenizer, tokenizer, cfg)
    got = Translator.from_export(exported, device="cpu").model.decode_pieces(pieces, cfg)
    assert any(nbest[0].hit_max_len for nbest in expected)
    if prefer_finished and beam_size > 1:  # some sentence's output changes
        by_score = decode_pieces(
            model, pieces, tokenizer, tokenizer, replace(cfg, prefer_finished=False)
        )
        assert [n[0].tokens for n in by_score] != [n[0].tokens for n in expected]
    assert [(n[0].tokens, n[0].hit_max_len) for n in got] == [
        (n[0].tokens, n[0].hit_max_len) for n in expected
    ]


def test_the_engines_beam_search_never_repeats_a_banned_ngram(exported: Path, pieces):
    cfg = DecodingConfig(beam_size=4, precision="fp32", no_repeat_ngram_size=2)
    for nbest in Translator.from_export(exported, device="cpu").model.decode_pieces(pieces, cfg):
        bigrams = list(zip(nbest[0].tokens, nbest[0].tokens[1:], strict=False))
        assert len(bigrams) == len(set(bigrams))


def test_translator_from_export_translates_alone(exported: Path, checkpoint: Path, tmp_path):
    """Copied away from the checkpoint, the export translates texts, long ones split into pieces,
    as the torch Translator does."""
    moved = Path(shutil.copytree(exported, tmp_path / "moved"))
    texts = ["the cat sat on the mat.", "", "a dog ran, " * 30, "これはテストです。"]
    torch_texts = [
        t.text
        for t in Translator.from_checkpoint(checkpoint, "cpu", precision="fp32").translate(texts)
    ]
    translator = Translator.from_export(moved, device="cpu")
    assert len(translator.sentences(texts[2])[0].pieces) > 1
    assert [t.text for t in translator.translate(texts)] == torch_texts


def test_evaluate_reads_the_splits_sources_in_the_runs_style_already_with_either_engine(
    model: Seq2SeqTransformer, tokenizer: BPETokenizer, tmp_path: Path, monkeypatch
):
    """A split's sources are stored in the run's input style: styling them again would tokenize
    small_parallel_enja's English twice."""
    pytest.importorskip("ctranslate2")
    config = composed_train("data=small_parallel_enja")
    config.model = TINY
    checkpoint = tmp_path / "averaged.pt"
    save_checkpoint(checkpoint, inference_state(model, tokenizer, tokenizer, config))
    exported = export_checkpoint(checkpoint, tmp_path / "ctranslate2", run="tiny").directory
    assert Translator.from_export(exported, device="cpu").conventions.source_style == (
        "lowercase_tokenized"
    )
    styles = []

    def loading_only(*args, **kwargs):
        styles.append(load_translator(*args, **kwargs)[0].conventions.source_style)
        raise KeyboardInterrupt  # the split is not read: the style is the point

    monkeypatch.setattr(evaluate_cli, "load_translator", loading_only)
    for engine, path in (("torch", checkpoint), ("ctranslate2", exported)):
        with pytest.raises(KeyboardInterrupt):
            evaluate_cli.main(["--checkpoint", str(path), "--engine", engine, "--device", "cpu"])
    assert styles == ["raw", "raw"]


@pytest.mark.parametrize("repair", [True, False])
def test_the_engines_translations_get_their_numbers_repaired_too(
    exported: Path, tokenizer: BPETokenizer, monkeypatch, repair: bool
):
    translator = Translator.from_export(exported, device="cpu", repair_numbers=repair)
    monkeypatch.setattr(translator.model, "decode_pieces", answering(tokenizer, "1959年。"))
    expected = "1995年。" if repair else "1959年。"
    assert translator.translate(["I was born in 1995."])[0].text == expected


def test_the_manifest_names_the_run_and_the_tokenizers(exported: Path, tokenizer: BPETokenizer):
    manifest = json.loads((exported / MANIFEST).read_text(encoding="utf-8"))
    assert (manifest["run"], manifest["step"], manifest["dev_bleu"]) == ("tiny", STEP, DEV_BLEU)
    assert manifest["quantization"] == "float32"
    for side in ("src", "tgt"):
        assert manifest["tokenizers"][side]["sha256"] == tokenizer.hash
        assert BPETokenizer.load(exported / TOKENIZER_FILES[side]).hash == tokenizer.hash


def test_an_altered_tokenizer_is_refused(exported: Path, tmp_path):
    altered = Path(shutil.copytree(exported, tmp_path / "altered"))
    other = tiny_tokenizer(("something else entirely.", "別の文です。"))
    other.save(altered / TOKENIZER_FILES["tgt"])
    with pytest.raises(ExportError, match="does not match the manifest's hash"):
        Translator.from_export(altered, device="cpu")


def test_a_directory_that_is_no_export_is_refused(tmp_path):
    pytest.importorskip("ctranslate2")
    with pytest.raises(ExportError, match="is not a CTranslate2 export"):
        Translator.from_export(tmp_path, device="cpu")


def test_int8_weights_translate_nearly_as_fp32(checkpoint: Path, exported: Path, pieces, tmp_path):
    """What the export decides is the weights' type; computed in float32 they cost the same
    outputs on any CPU. CTranslate2's int8 products depend on the CPU: without VNNI (AVX2) its
    oneDNN kernels add pairs of u8·s8 products in saturating int16, which changes about half of
    this tiny model's outputs; their effect on a trained model's BLEU is measured by
    scripts/bench_ctranslate2.py (docs/benchmarks.md, CTranslate2)."""
    int8 = export_checkpoint(checkpoint, tmp_path / "int8", quantization="int8").directory
    assert (int8 / "model.bin").stat().st_size < 0.5 * (exported / "model.bin").stat().st_size
    cfg = DecodingConfig(beam_size=1, precision="fp32")
    fp32_out = Translator.from_export(exported, device="cpu").model.decode_pieces(pieces, cfg)
    dequantized = CTranslate2Model(int8, device="cpu", compute_type="float32")
    int8_out = dequantized.decode_pieces(pieces, cfg)
    same = sum(a[0].tokens == b[0].tokens for a, b in zip(fp32_out, int8_out, strict=True))
    assert same >= 0.8 * len(pieces)


@pytest.mark.parametrize("quantization", ["int8", "float32"])
@pytest.mark.parametrize("beam_size", [1, 4])
def test_per_core_workers_run_the_same_search_as_one_worker(
    checkpoint: Path, pieces, tmp_path, monkeypatch, quantization, beam_size
):
    directory = export_checkpoint(checkpoint, tmp_path / "m", quantization=quantization).directory
    engine = CTranslate2Model(directory, device="cpu", threads=2)
    assert engine.on_workers()
    worker_batch, batches = ctranslate2_engine.worker_batch, []
    one_worker, on_one_worker = engine.one_worker, []
    monkeypatch.setattr(engine, "one_worker", lambda: on_one_worker.append(True) or one_worker())

    def small_batches(*args) -> int:
        batches.append(worker_batch(*args))
        return 8  # several batches on each worker

    monkeypatch.setattr(ctranslate2_engine, "worker_batch", small_batches)
    cfg = DecodingConfig(beam_size=beam_size, nbest=beam_size, precision="fp32")
    per_core = engine.decode_pieces(pieces, cfg)
    engine.per_core_workers = False
    one_worker = engine.decode_pieces(pieces, cfg)
    assert on_one_worker  # the second search ran on the one worker
    assert batches  # the first search ran on the workers
    assert [[h.tokens for h in n] for n in per_core] == [[h.tokens for h in n] for n in one_worker]


def test_every_length_classs_search_is_queued_before_any_is_awaited(exported: Path, pieces):
    """So that a worker that finishes its batches of one class goes on to the next class's."""
    engine = CTranslate2Model(exported, device="cpu", threads=2)
    events: list[str] = []

    class Awaited:
        def __init__(self, pending: Any) -> None:
            self.pending = pending

        def result(self) -> Any:
            events.append("await")
            return self.pending.result()

    class Recording:
        def __init__(self, translator: Any) -> None:
            self.translator = translator

        def translate_batch(self, sources: list[list[str]], **options: Any) -> list[Awaited]:
            events.append("queue")
            return [Awaited(p) for p in self.translator.translate_batch(sources, **options)]

    engine.translator = Recording(engine.translator)
    cfg = DecodingConfig(beam_size=4, precision="fp32")
    classes = len(ctranslate2_engine.by_length_class(pieces, cfg.beam_size))
    assert classes > 1
    assert len(engine.decode_pieces(pieces, cfg)) == len(pieces)
    assert events[: classes + 1] == ["queue"] * classes + ["await"]


def test_loading_an_export_leaves_torchs_threads_as_they_were(exported: Path):
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        engine = CTranslate2Model(exported, device="cpu")
        assert torch.get_num_threads() == 2
        assert engine.workers == 2
        assert CTranslate2Model(exported, device="cpu").workers == 2  # the next model too
        CTranslate2Model(exported, device="cpu", threads=3).one_worker()  # intra_threads=3
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize(
    ("sources", "beam_size", "expected"),
    [(1, 5, 1), (7, 5, 4), (64, 1, 32), (500, 5, 32), (500, 1, 125), (321, 1, 81)],
)
def test_worker_batches_share_a_call_evenly_up_to_a_row_budget(sources, beam_size, expected):
    cfg = DecodingConfig(beam_size=beam_size)
    assert ctranslate2_engine.worker_batch(sources, 2, cfg) == expected


def test_the_heatmap_is_the_torch_models_last_layer(exported: Path, model, tokenizer):
    service = TranslationService(Translator.from_export(exported, device="cpu"), run="tiny")
    assert service.info.engine == "ctranslate2"
    text = "the cat sat."
    best = service.translator.translate([text])[0].candidates[0]
    [source] = service.translator.translate([text])[0].sentences
    search = Search(service.translator.decode.beam_size, nbest=1, attention=True)
    [served] = service.translate(search, [text])
    alignment = served.sentences[0].attention
    assert alignment is not None
    src_ids = [*source.pieces[0], tokenizer.eos_id]
    tgt_out = best.tokens if best.hit_max_len else [*best.tokens, tokenizer.eos_id]
    expected = teacher_forced_attention(model, src_ids, tgt_out, tokenizer.bos_id)[-1]
    assert alignment.layers == [TINY.n_decoder_layers]
    assert torch.tensor(alignment.weights[0]) == pytest.approx(expected, abs=2e-3)


def test_an_ensemble_is_refused_in_one_line(checkpoint: Path, capsys):
    argv = ["--checkpoint", str(checkpoint), "--ensemble", str(checkpoint)]
    with pytest.raises(ExportError, match="an ensemble cannot be exported"):
        export_program.main(argv)


def test_an_existing_directory_needs_force(checkpoint: Path, exported: Path):
    # `make export`, then the README's int8 export: what is there and how to replace it.
    message = (
        f"{exported} exists (an export of step {STEP}, float32); pass --force to replace it with "
        "this export (int8), or --output DIR to write this one elsewhere"
    )
    argv = ["--checkpoint", str(checkpoint), "--quantization", "int8"]
    with pytest.raises(ExportError, match=re.escape(message)):
        export_program.main(argv)


def test_an_export_rerun_with_the_same_settings_is_up_to_date(
    checkpoint: Path, exported: Path, capsys
):
    written = (exported / "model.bin").stat().st_mtime_ns
    assert export_program.main(["--checkpoint", str(checkpoint)]) == 0
    assert capsys.readouterr().err == (
        f"{exported} is up to date: it holds {checkpoint}'s weights (float32); nothing to do "
        "(--force writes it again)\n"
    )
    assert (exported / "model.bin").stat().st_mtime_ns == written


def test_an_export_whose_model_file_changed_is_refused(exported: Path, tmp_path):
    copied = shutil.copytree(exported, tmp_path / "copy")
    with (copied / "model.bin").open("r+b") as file:
        file.seek(-4, os.SEEK_END)
        file.write(b"\xff" * 4)
    with pytest.raises(ExportError, match=r"model\.bin is damaged: it does not match the sha256"):
        Translator.from_export(copied, device="cpu")


def test_without_ctranslate2_the_error_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "ctranslate2", None)  # `import ctranslate2` fails
    with pytest.raises(ExportError, match=re.escape(INSTALL_HINT)):
        import_ctranslate2()


def test_the_api_serves_the_export(exported: Path):
    from fastapi.testclient import TestClient

    from llm_from_scratch.serving.api import create_app
    from llm_from_scratch.serving.config import ServingConfig

    service = TranslationService(Translator.from_export(exported, device="cpu"), run="tiny")
    with TestClient(create_app(service, ServingConfig()), base_url="http://localhost") as client:
        health = client.get("/api/health").json()
        response = client.post(
            "/api/translate", json={"texts": ["the cat sat."], "beam": 2, "attention": True}
        ).json()
    assert (health["model"]["engine"], health["model"]["step"]) == ("ctranslate2", STEP)
    translation = response["translations"][0]
    expected = Translator.from_export(exported, device="cpu", beam_size=2).translate(
        ["the cat sat."]
    )[0]
    assert translation["text"] == expected.text
    attention = translation["sentences"][0]["attention"]
    assert attention["layers"] == [TINY.n_decoder_layers]
    assert len(attention["weights"][0]) == len(attention["target"])
    assert all(len(row) == len(attention["source"]) for row in attention["weights"][0])


def test_translate_with_the_engine_flag_prints_the_torch_translations(
    exported: Path, checkpoint: Path, capsys
):
    texts = ["the cat sat on the mat.", "a dog ran."]
    args = ["--checkpoint", str(checkpoint), "decoding.precision=fp32", *texts]
    assert translate_cli.main(args) == 0
    torch_lines = capsys.readouterr().out
    args = ["--engine", "ctranslate2", "--checkpoint", str(exported), *texts]
    assert translate_cli.main(args) == 0
    captured = capsys.readouterr()
    assert captured.out == torch_lines
    assert f"model: {exported.resolve()}" in captured.err


@pytest.mark.slow
def test_evaluate_with_the_engine_flag_scores_the_torch_translations(
    exported: Path, checkpoint: Path, corpus_mirror: Path, tmp_path: Path
):
    common = [
        "--beam",
        "1",
        "--limit",
        "8",
        "--data",
        "small_parallel_enja",
        f"data.mirror={corpus_mirror}",
        f"paths.raw_dir={tmp_path / 'raw'}",
        f"paths.cache_dir={tmp_path / 'cache'}",
        "decoding.precision=fp32",
    ]
    torch_dir, engine_dir = tmp_path / "torch", tmp_path / "engine"
    assert (
        evaluate_cli.main(
            ["--checkpoint", str(checkpoint), *common, "--output-dir", str(torch_dir)]
        )
        == 0
    )
    engine_args = ["--engine", "ctranslate2", "--checkpoint", str(exported), *common]
    assert evaluate_cli.main([*engine_args, "--output-dir", str(engine_dir)]) == 0
    metrics = json.loads((engine_dir / "metrics.json").read_text(encoding="utf-8"))
    assert metrics["engine"] == "ctranslate2"
    hypotheses = (engine_dir / "hypotheses.txt").read_text(encoding="utf-8")
    assert hypotheses == (torch_dir / "hypotheses.txt").read_text(encoding="utf-8")
