"""CTranslate2 against torch: greedy and beam-5 sentences/s and BLEU, in this one process.

Exports the model to CTranslate2 twice (float32 and int8 weights, into a temporary directory)
and translates the small_parallel_enja test split (or its first --sentences) with the torch
engine at `decoding.precision=auto` (bf16 autocast where the CPU computes it natively, else fp32)
and with CTranslate2 in int8 and in float32, every engine on the same --threads. Prints
sentences/s, the speed ratio to torch and the BLEU (ja-mecab: metrics.bleu_tokenizer) of each.
Then the equivalence of the fp32 engines: how many outputs CTranslate2 fp32 shares with torch
fp32, greedy and beam-5 (with the run's length penalty, and without one, where both engines run
the same search); the differing ones are counted as ties when torch scores both outputs within
--tie of each other (greedy: the two tokens where they part; beam: the whole outputs).
The model is the --checkpoint given, else run `default`'s final model, else a fresh `model=small`
with the dataset's tokenizers (its outputs run to the length limit: the slowest case).

    .venv/bin/python scripts/bench_ctranslate2.py [--checkpoint runs/default/averaged.pt]
        [--sentences 500] [--threads 2] [--table-rows]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import torch

from llm_from_scratch.checkpoint import (
    CheckpointError,
    inference_state,
    load_checkpoint,
    restore_for_inference,
    run_model,
    save_checkpoint,
)
from llm_from_scratch.data.corpus import corpus_labels, load_split
from llm_from_scratch.data.sources import fetch_data
from llm_from_scratch.decoding.config import DecodingConfig
from llm_from_scratch.decoding.conventions import TextConventions
from llm_from_scratch.decoding.torch_engine import TorchModel
from llm_from_scratch.decoding.translator import Translation, Translator
from llm_from_scratch.evaluation.scores import score, segmented_ja
from llm_from_scratch.export.ctranslate2_model import export_checkpoint, import_ctranslate2
from llm_from_scratch.precision import select_precision
from llm_from_scratch.programs.command import exit_on_user_error
from llm_from_scratch.programs.common import compose_config
from llm_from_scratch.programs.train import TrainConfig
from llm_from_scratch.programs.train_tokenizer import load_or_train_tokenizers

VARIANTS = [("greedy", 1), ("beam-5", 5)]


def model_checkpoint(args: argparse.Namespace, config: TrainConfig, workdir: Path) -> Path:
    """The checkpoint to time: --checkpoint, run default's final model, else a fresh model's."""
    if args.checkpoint:
        return args.checkpoint
    try:
        return run_model(config.paths.runs_dir, "default")
    except CheckpointError:
        from llm_from_scratch.checkpoint import build_model

        src_tok, tgt_tok = load_or_train_tokenizers(config.data, config.tokenizer, config.paths)
        torch.manual_seed(config.training.seed)
        model = build_model(config.model, src_tok, tgt_tok, config.tokenizer.shared)
        path = workdir / "fresh.pt"
        save_checkpoint(path, inference_state(model, src_tok, tgt_tok, config))
        return path


def timed(
    translator: Translator, sources: list[str], repeats: int = 3
) -> tuple[float, list[Translation]]:
    """Sentences/s translating `sources` after a short warm-up, the best of `repeats` runs (a
    greedy run is a fraction of a second, which the host's noise would otherwise decide), and
    the translations."""
    translator.translate(sources[:8])
    rates = []
    for _ in range(repeats):
        start = time.perf_counter()
        translations = translator.translate(sources)
        rates.append(len(sources) / (time.perf_counter() - start))
    return max(rates), translations


def source_pieces(translator: Translator, text: str) -> list[list[int]]:
    """The source ids `translator` decodes for `text`, over all its sentences."""
    return [piece for sentence in translator.sentences(text) for piece in sentence.pieces]


@torch.inference_mode()
def teacher_forced_log_probs(translator: Translator, text: str, tokens: list[int]) -> torch.Tensor:
    """(len(tokens) + 1, vocab): the torch model's next-token log-probabilities along `tokens`
    then EOS, BOS and PAD excluded as the searches exclude them."""
    tok = translator.tgt_tok
    src = torch.tensor([[*source_pieces(translator, text)[0], translator.src_tok.eos_id]])
    tgt_in = torch.tensor([[tok.bos_id, *tokens]])
    logits = translator.model.model(src, torch.ones_like(src, dtype=torch.bool), tgt_in)[0]
    log_probs = logits.double().log_softmax(-1)
    log_probs[:, [tok.bos_id, tok.pad_id]] = float("-inf")
    return log_probs


def is_tie(translator: Translator, text: str, a: list[int], b: list[int], tie: float) -> bool:
    """Whether torch scores outputs `a` and `b` within `tie`: greedy search at the token where
    they part, beam search (nbest 1, no length penalty) as whole outputs."""
    if len(source_pieces(translator, text)) != 1:
        return False
    eos = translator.tgt_tok.eos_id
    if translator.decode.beam_size == 1:
        common = next(
            (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
        )
        step = teacher_forced_log_probs(translator, text, a[:common])[common]
        first = [*a, eos][common]
        second = [*b, eos][common]
        return abs(float(step[first] - step[second])) <= tie
    totals = []
    for tokens in (a, b):
        log_probs = teacher_forced_log_probs(translator, text, tokens)
        totals.append(float(log_probs.gather(1, torch.tensor([[*tokens, eos]]).T).sum()))
    return abs(totals[0] - totals[1]) <= tie


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", type=Path, help="default: runs/default's final model")
    parser.add_argument("--sentences", type=int, default=500, help="first N of the test split")
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--tie", type=float, default=1e-3, help="log-probability of a tie")
    parser.add_argument("--table-rows", action="store_true", help="print `make bench` rows only")
    args = parser.parse_args()
    import_ctranslate2()  # the export extra, or a one-line error
    torch.set_num_threads(args.threads)

    config = compose_config("train", ["model=small", "decoding=beam"], TrainConfig)
    fetch_data(config.data, config.paths)
    details = sys.stderr if args.table_rows else sys.stdout
    with tempfile.TemporaryDirectory() as workdir:
        checkpoint = model_checkpoint(args, config, Path(workdir))
        exports = {
            quantization: export_checkpoint(
                checkpoint, Path(workdir) / quantization, quantization=quantization
            ).directory
            for quantization in ("int8", "float32")
        }
        state = load_checkpoint(checkpoint)
        model, src_tok, tgt_tok, run_config = restore_for_inference(state, "cpu")
        pairs = load_split(config.data, "test", config.paths)
        sources = list(pairs["src"])[: args.sentences]
        references = list(pairs["tgt"])[: args.sentences]
        corpora = "+".join(dict.fromkeys(corpus_labels(pairs, config.data.name)[: len(sources)]))
        languages = config.data.source_lang, config.data.target_lang
        segmented = segmented_ja(references, languages)
        run_decoding = DecodingConfig(**run_config["decoding"])
        conventions = TextConventions(config.data.source_lang, config.data.target_lang)
        precision = select_precision("auto", torch.device("cpu"), key="decoding.precision").name
        conditions = (
            f"{len(sources)} sentences of {corpora} test; "
            f"checkpoint {checkpoint}; "
            f"CPU, {args.threads} threads; length penalty {run_decoding.length_penalty}"
        )
        print(conditions, file=details)

        def bleu_of(translations: list[Translation]) -> float:
            return score(sources, translations, references, languages, segmented)["bleu"]

        for name, beam_size in VARIANTS:
            decode = replace(run_decoding, beam_size=beam_size, nbest=1)
            torch_translator = Translator(
                TorchModel(model, src_tok, tgt_tok),
                replace(decode, precision=precision),
                conventions,
            )
            torch_rate, torch_out = timed(torch_translator, sources)
            torch_bleu = bleu_of(torch_out)
            print(
                f"{name:7} torch {precision}: {torch_rate:8.1f} sentences/s, BLEU {torch_bleu:.2f}",
                file=details,
            )
            for quantization, directory in exports.items():
                engine = Translator.from_export(directory, device="cpu", decode=decode)
                workers = engine.model.on_workers()
                if workers:
                    engine.model.per_core_workers = False
                    one_rate, _ = timed(engine, sources)
                    engine.model.per_core_workers = True
                    print(
                        f"{name:7} CTranslate2 {quantization}, one worker: {one_rate:8.1f} "
                        "sentences/s (the reference of the per-core workers below)",
                        file=details,
                    )
                rate, out = timed(engine, sources)
                engine_bleu = bleu_of(out)
                print(
                    f"{name:7} CTranslate2 {quantization}{', per-core workers' if workers else ''}:"
                    f" {rate:8.1f} sentences/s ({rate / torch_rate:.2f}x torch {precision})"
                    + (f" ({rate / one_rate:.2f}x one worker)" if workers else "")
                    + f", BLEU {engine_bleu:.2f}",
                    file=details,
                )
                if args.table_rows:
                    print(
                        f"| decoding {name}, CTranslate2 {quantization}: sentences/s "
                        f"| {rate:,.1f} | {torch_rate:,.1f} (torch {precision}) "
                        f"| {rate / torch_rate:.2f} | BLEU {engine_bleu:.2f} against "
                        f"{torch_bleu:.2f}; {conditions} |"
                    )
            equivalence(
                exports["float32"], model, src_tok, tgt_tok, decode, conventions, sources, args
            )


def equivalence(
    directory: Path,
    model: torch.nn.Module,
    src_tok,
    tgt_tok,
    decode: DecodingConfig,
    conventions: TextConventions,
    sources: list[str],
    args: argparse.Namespace,
) -> None:
    """Print how many outputs CTranslate2 fp32 shares with torch fp32, and how many of the
    others are ties; beam search also without length penalty, where the searches are the same."""
    details = sys.stderr if args.table_rows else sys.stdout
    penalties = [decode.length_penalty] if decode.beam_size == 1 else [decode.length_penalty, 0.0]
    for alpha in penalties:
        fp32 = replace(decode, precision="fp32", length_penalty=alpha)
        torch_translator = Translator(TorchModel(model, src_tok, tgt_tok), fp32, conventions)
        engine = Translator.from_export(directory, device="cpu", decode=fp32)
        expected = [t.candidates[0].tokens for t in torch_translator.translate(sources)]
        got = [t.candidates[0].tokens for t in engine.translate(sources)]
        differing = [i for i, (a, b) in enumerate(zip(expected, got, strict=True)) if a != b]
        ties = (
            sum(
                is_tie(torch_translator, sources[i], expected[i], got[i], args.tie)
                for i in differing
            )
            if decode.beam_size == 1 or alpha == 0
            else None
        )
        same = len(sources) - len(differing)
        search = "greedy" if decode.beam_size == 1 else f"beam-{decode.beam_size}"
        tie_note = f", {ties} of the {len(differing)} others ties (within {args.tie})"
        tie_note = tie_note if ties is not None else ", the length penalties differ"
        print(
            f"  fp32 equivalence, {search}, length penalty {alpha}: "
            f"{same} of {len(sources)} outputs identical{tie_note}",
            file=details,
        )
        if args.table_rows:
            print(
                f"| decoding {search}, length penalty {alpha}: CTranslate2 fp32 "
                f"outputs identical to torch fp32 | {same} | {len(sources)} (sentences) | "
                f"| {tie_note.removeprefix(', ')} |"
            )


if __name__ == "__main__":
    with exit_on_user_error():
        main()
