"""The transformers export against torch: equivalence, BLEU three ways and speed, in one process.

Exports the model (timed) into a temporary folder and loads it with stock transformers
(`AutoModelForSeq2SeqLM`, `AutoTokenizer`). On the run's test split (or its first --sentences):
- the exported tokenizer's ids against ours for every source, and its decoding of every
  reference's target ids against ours;
- greedy search, and beam search without a length penalty or no-repeat ban (the searches
  defined alike), in fp32 with one output limit for both: outputs identical;
- test BLEU three ways: this project's translator (as `make eval`: sentence splitting,
  placeholders, number repair, loop avoidance), its search alone with the translator's extras
  off (each test line tokenized and searched whole, with the run's decoding settings), and the
  export run as a pipeline runs it (tokenizer, `generate` with its generation_config.json,
  `batch_decode`), with sentences/s of the last two.

    .venv/bin/python scripts/bench_transformers.py [--checkpoint runs/default/averaged.pt]
        [--sentences 500 (0: all)] [--batch 32] [--threads 2] [--table-rows]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch

from llm_from_scratch.checkpoint import load_checkpoint, restore_for_inference, run_model
from llm_from_scratch.data.config import DataConfig
from llm_from_scratch.data.corpus import corpus_labels, load_split
from llm_from_scratch.data.sources import fetch_data
from llm_from_scratch.decoding.batched import decode_pieces
from llm_from_scratch.decoding.common import output_limits
from llm_from_scratch.decoding.config import DecodingConfig
from llm_from_scratch.decoding.loading import decoding_settings, restore_models
from llm_from_scratch.decoding.translator import Candidate, Translation, Translator
from llm_from_scratch.evaluation.scores import score, segmented_ja
from llm_from_scratch.export.transformers_model import (
    Layout,
    export_to_transformers,
    import_transformers,
)
from llm_from_scratch.paths import PathsConfig
from llm_from_scratch.programs.common import exit_on_user_error
from llm_from_scratch.schema import to_schema


def as_translations(texts: list[str]) -> list[Translation]:
    """Plain output texts in the shape `evaluate.score` reads."""
    return [Translation([Candidate(text, 0.0, [])]) for text in texts]


@torch.inference_mode()
def hf_generate(
    model: Any, tokenizer: Any, sources: list[str], batch: int, **generate: Any
) -> tuple[list[list[int]], float]:
    """transformers' output ids (start token dropped, EOS and padding kept) of each source, in
    batches of similar length, and the seconds it took."""
    order = sorted(range(len(sources)), key=lambda i: len(sources[i]))
    outputs: list[list[int]] = [[] for _ in sources]
    start = time.perf_counter()
    for first in range(0, len(order), batch):
        chosen = order[first : first + batch]
        inputs = tokenizer([sources[i] for i in chosen], return_tensors="pt", padding=True)
        rows = model.generate(**inputs, **generate)
        for i, row in zip(chosen, rows[:, 1:].tolist(), strict=True):
            outputs[i] = row
    return outputs, time.perf_counter() - start


def target_ids(row: list[int], offset: int, eos: int) -> list[int]:
    """A transformers output row as our target ids, up to its EOS."""
    ended = row.index(offset + eos) if offset + eos in row else len(row)
    return [token - offset for token in row[:ended]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", type=Path, help="default: runs/default's final model")
    parser.add_argument(
        "--sentences", type=int, default=500, help="first N of the test split (0: all of it)"
    )
    parser.add_argument("--batch", type=int, default=32, help="transformers' sentences a batch")
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--table-rows", action="store_true", help="print `make bench` rows only")
    args = parser.parse_args()
    transformers = import_transformers()  # the export extra, or a one-line error
    torch.set_num_threads(args.threads)
    details = sys.stderr if args.table_rows else sys.stdout
    paths = PathsConfig()
    checkpoint = args.checkpoint or run_model(paths.runs_dir, "default")

    with tempfile.TemporaryDirectory() as workdir:
        exported = export_to_transformers(checkpoint, Path(workdir) / "transformers")
        print(
            f"export: {exported.model_class} in {exported.seconds:.1f} s ({checkpoint})",
            file=details,
        )
        hf_model = transformers.AutoModelForSeq2SeqLM.from_pretrained(exported.directory).eval()
        hf_tok = transformers.AutoTokenizer.from_pretrained(exported.directory)
        state = load_checkpoint(checkpoint)
        model, src_tok, tgt_tok, run_config = restore_for_inference(state, "cpu")
        data = to_schema(run_config["data"], DataConfig)
        fetch_data(data, paths)
        pairs = load_split(data, "test", paths)
        count = args.sentences or len(pairs)
        sources, references = list(pairs["src"])[:count], list(pairs["tgt"])[:count]
        corpora = "+".join(dict.fromkeys(corpus_labels(pairs, data.name)[: len(sources)]))
        languages = data.source_lang, data.target_lang
        segmented = segmented_ja(references, languages)
        layout = Layout.of(src_tok, tgt_tok, bool(run_config["tokenizer"]["shared"]))
        offset, eos = layout.offset, tgt_tok.eos_id
        run_decoding = DecodingConfig(**run_config["decoding"])
        conditions = (
            f"{len(sources)} sentences of {corpora} test; {checkpoint}; CPU, "
            f"{args.threads} threads, fp32; transformers {transformers.__version__}"
        )
        print(conditions, file=details)

        def bleu_of(texts: list[str]) -> float:
            return score(sources, as_translations(texts), references, languages, segmented)["bleu"]

        # Tokenizers.
        same_ids = sum(
            hf_tok(text).input_ids == [*src_tok.encode(text), src_tok.eos_id] for text in sources
        )
        same_text = sum(
            hf_tok.decode([offset + i for i in tgt_tok.encode(text)], skip_special_tokens=True)
            == tgt_tok.decode(tgt_tok.encode(text))
            for text in references
        )
        print(
            f"tokenizer: {same_ids} of {len(sources)} sources' ids identical, {same_text} of "
            f"{len(references)} references' target ids decoded identically",
            file=details,
        )

        # The searches defined alike: one limit for both, the longest of ours.
        pieces = [src_tok.encode(text) for text in sources]
        lengths = torch.tensor([len(piece) + 1 for piece in pieces])
        mask = torch.arange(int(lengths.max()))[None, :] < lengths[:, None]
        limit = int(
            output_limits(
                mask, run_decoding.max_len_a, run_decoding.max_len_b, model.cfg.max_positions
            ).max()
        )
        alike = replace(
            run_decoding, precision="fp32", max_len_a=0, max_len_b=limit, nbest=1,
            no_repeat_ngram_size=0, length_penalty=0.0,
        )  # fmt: skip
        for name, beam in (
            ("greedy", 1),
            (f"beam-{run_decoding.beam_size}", run_decoding.beam_size),
        ):
            cfg = replace(alike, beam_size=beam)
            start = time.perf_counter()
            ours = [n[0].tokens for n in decode_pieces(model, pieces, src_tok, tgt_tok, cfg)]
            ours_seconds = time.perf_counter() - start
            rows, seconds = hf_generate(
                hf_model, hf_tok, sources, args.batch, num_beams=beam, max_new_tokens=limit,
                no_repeat_ngram_size=0, length_penalty=0.0, early_stopping="never",
            )  # fmt: skip
            theirs = [target_ids(row, offset, eos) for row in rows]
            same = sum(a == b for a, b in zip(ours, theirs, strict=True))
            print(
                f"{name}, no length penalty, no ban, limit {limit}: {same} of {len(sources)} "
                f"outputs identical ({100 * same / len(sources):.2f}%); "
                f"{len(sources) / seconds:.1f} sentences/s transformers, "
                f"{len(sources) / ours_seconds:.1f} torch",
                file=details,
            )
            if args.table_rows:
                print(
                    f"| {name}: transformers outputs identical to torch fp32 | {same} | "
                    f"{len(sources)} (sentences) | | {conditions} |"
                )

        # BLEU three ways, each with its own defaults.
        restored = restore_models([checkpoint], torch.device("cpu"))
        fp32 = decoding_settings(restored.config, None, {"precision": "fp32"})
        # The split's sources are in the run's style already.
        translator = Translator.from_restored(restored, fp32, source_style="raw")
        full = [t.text for t in translator.translate(sources)]
        start = time.perf_counter()
        bare = decode_pieces(
            model, pieces, src_tok, tgt_tok, replace(run_decoding, precision="fp32", nbest=1)
        )
        bare_seconds = time.perf_counter() - start
        bare_texts = [tgt_tok.decode(n[0].tokens) for n in bare]
        rows, seconds = hf_generate(hf_model, hf_tok, sources, args.batch)
        pipeline_texts = hf_tok.batch_decode(rows, skip_special_tokens=True)
        same = sum(a == b for a, b in zip(bare_texts, pipeline_texts, strict=True))
        scores = {
            "translator (make eval)": bleu_of(full),
            "search alone, extras off": bleu_of(bare_texts),
            "transformers, as a pipeline": bleu_of(pipeline_texts),
        }
        for what, bleu in scores.items():
            print(f"test BLEU, {what}: {bleu:.2f}", file=details)
        ratio = (len(sources) / seconds) / (len(sources) / bare_seconds)
        print(
            f"run's search (beam {run_decoding.beam_size}, α {run_decoding.length_penalty}): "
            f"{same} of {len(sources)} pipeline outputs as the search alone's; "
            f"{len(sources) / seconds:.1f} sentences/s transformers, "
            f"{len(sources) / bare_seconds:.1f} torch ({ratio:.2f}x)",
            file=details,
        )
        if args.table_rows:
            pipeline_bleu = scores["transformers, as a pipeline"]
            print(
                f"| decoding beam-{run_decoding.beam_size}, transformers fp32: sentences/s "
                f"| {len(sources) / seconds:,.1f} | {len(sources) / bare_seconds:,.1f} (torch "
                f"fp32, extras off) | {ratio:.2f} | BLEU {pipeline_bleu:.2f}"
                f" against {scores['search alone, extras off']:.2f}; {conditions} |"
            )


if __name__ == "__main__":
    with exit_on_user_error():
        main()
