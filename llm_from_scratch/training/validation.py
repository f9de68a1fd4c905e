"""Periodic validation: dev loss and perplexity, BLEU/chrF of greedy translations, and labelled
cross-attention figures; at the end of a run, greedy BLEU/chrF of the final model on test.

Where a split mixes several corpora (its `corpus` column), BLEU and chrF are given per corpus
too, as `<corpus>/bleu` and `<corpus>/chrf` beside the overall `bleu` and `chrf`; the dev
sentences decoded for BLEU are spread evenly over the corpora, but for `data.dev_corpus`, whose
BLEU picks the model: all of its sentences are decoded first.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import torch

from llm_from_scratch.data.corpus import corpus_labels
from llm_from_scratch.data.datamodule import DataModule
from llm_from_scratch.decoding.batched import decode_pieces
from llm_from_scratch.decoding.number_repair import repair_numbers
from llm_from_scratch.decoding.torch_engine import teacher_forced_attention
from llm_from_scratch.evaluation.corpora import rows_first_of, scores_by_corpus, spread_rows
from llm_from_scratch.evaluation.metrics import corpus_scores
from llm_from_scratch.model.transformer import Seq2SeqTransformer
from llm_from_scratch.precision import Precision
from llm_from_scratch.training.attention_figure import (
    attention_figure,
    render,
)
from llm_from_scratch.training.config import TrainConfig
from llm_from_scratch.training.loss import summed_cross_entropy
from llm_from_scratch.training.stats import RunLogger

EXAMPLES_SHOWN = 5  # dev sentences whose translations are logged at every evaluation
ATTENTION_SENTENCES = 3  # dev sentences whose cross-attention is drawn at every evaluation
ATTENTION_MAX_PIECES = 30  # longer sentences make unreadable figures: drawn only if no others


class Validator:
    def __init__(
        self,
        model: Seq2SeqTransformer,
        data: DataModule,
        precision: Precision,
        config: TrainConfig,
    ) -> None:
        self.model = model
        self.data = data
        self.precision = precision
        # Greedy: a fraction of beam search's time, and it tracks beam's BLEU closely enough to
        # compare checkpoints.
        self.greedy = replace(config.decoding, beam_size=1, nbest=1, no_repeat_ngram_size=0)
        self.target_lang = config.data.target_lang  # BLEU cuts words as this language needs
        dev = data.splits["dev"]
        corpora = corpus_labels(dev, data.cfg.name)
        total, selecting = config.training.dev_bleu_sentences, config.data.dev_corpus
        if selecting is None:
            chosen = spread_rows(corpora, total)
        else:  # the corpus whose BLEU picks the model: all of it, the others beside it
            chosen = rows_first_of(corpora, selecting, total)
        self.bleu_subset = dev.select(chosen)
        self.subset_corpora = [corpora[index] for index in chosen]
        self.mixed = len(set(corpora)) > 1
        self.example_rows = spread_rows(self.subset_corpora, EXAMPLES_SHOWN)
        lengths = zip(self.bleu_subset["src_len"], self.bleu_subset["tgt_len"], strict=True)
        too_long = [max(pair) > ATTENTION_MAX_PIECES for pair in lengths]
        by_length = sorted(range(len(too_long)), key=lambda index: (too_long[index], index))
        self.attention_examples = by_length[:ATTENTION_SENTENCES]

    @torch.no_grad()
    def run(self, step: int, log: RunLogger, tag: str = "dev") -> dict[str, float]:
        """Score the model on dev; TensorBoard gets the figures under `tag/`."""
        self.model.eval()
        loss, tokens = 0.0, 0
        for batch in self.data.eval_loader("dev", self.precision.device):
            batch = batch.to(self.precision.device)
            with self.precision.autocast():
                logits = self.model(batch.src, batch.src_mask, batch.tgt_in)
            loss += summed_cross_entropy(logits, batch.tgt_out, self.data.tgt_tok.pad_id).item()
            tokens += batch.tgt_tokens
        hypotheses = self.translate(self.bleu_subset["src_ids"], self.bleu_subset["src"])
        references = self.bleu_subset["tgt"]
        scores = corpus_scores(hypotheses, references, self.target_lang)
        metrics = {
            "loss": loss / max(tokens, 1),
            "perplexity": math.exp(min(loss / max(tokens, 1), 50.0)),
            "bleu": scores.bleu,
            "chrf": scores.chrf,
            **per_corpus_metrics(
                hypotheses, references, self.subset_corpora, self.target_lang, self.mixed
            ),
        }
        log.scalars({f"{tag}/{name}": value for name, value in metrics.items()}, step)
        log.text(f"{tag}/examples", self._examples_table(hypotheses), step)
        for number, image in enumerate(self._attention_images(), start=1):
            log.image(f"{tag}/cross_attention/{number}", image, step)
        self.model.train()
        return metrics

    @torch.no_grad()
    def score_test(self, step: int, log: RunLogger) -> dict[str, float] | None:
        """Greedy BLEU and chrF of the whole test split (None when it is empty)."""
        test = self.data.splits["test"]
        if len(test) == 0:
            return None
        self.model.eval()
        hypotheses, references = self.translate(test["src_ids"], test["src"]), test["tgt"]
        self.model.train()
        scores = corpus_scores(hypotheses, references, self.target_lang)
        corpora = corpus_labels(test, self.data.cfg.name)
        metrics = {
            "bleu": scores.bleu,
            "chrf": scores.chrf,
            **per_corpus_metrics(
                hypotheses, references, corpora, self.target_lang, len(set(corpora)) > 1
            ),
        }
        log.scalars({f"test/{name}": value for name, value in metrics.items()}, step)
        return metrics

    def test_share(self) -> float:
        """Decoding the test split once, in decodings of a validation's dev sentences: its
        reference tokens over theirs."""
        test_tokens = sum(self.data.splits["test"]["tgt_len"])
        return test_tokens / max(sum(self.bleu_subset["tgt_len"]), 1)

    @torch.no_grad()
    def rehearse_scoring(self) -> None:
        """A validation's work besides decoding, to time it before training: the dev loss pass
        and the attention figures."""
        self.model.eval()
        for batch in self.data.eval_loader("dev", self.precision.device):
            batch = batch.to(self.precision.device)
            with self.precision.autocast():
                self.model(batch.src, batch.src_mask, batch.tgt_in)
        self._attention_images()
        self.model.train()

    @torch.no_grad()
    def rehearse_decoding(self) -> None:
        """A validation's greedy decoding of its BLEU sentences, to time it before training, with
        outputs as long as their references on average (an untrained model runs every output to
        the length limit, which a trained one rarely does)."""
        self.model.eval()
        lengths = self.bleu_subset.select_columns(["src_len", "tgt_len"])
        ratio = sum(lengths["tgt_len"]) / max(sum(lengths["src_len"]), 1)
        like_references = replace(self.greedy, max_len_a=ratio, max_len_b=1)
        with self.precision.autocast():
            decode_pieces(
                self.model,
                self.bleu_subset["src_ids"],
                self.data.src_tok,
                self.data.tgt_tok,
                like_references,
            )
        self.model.train()

    def translate(self, src_ids: list[list[int]], sources: list[str]) -> list[str]:
        """Greedy translations of tokenized sources (`sources`: their texts), in their order,
        numbers repaired as the translator repairs them (`decoding.repair_numbers`), so that dev
        and test scores are those of the outputs a user gets."""
        with self.precision.autocast():
            nbests = decode_pieces(
                self.model, src_ids, self.data.src_tok, self.data.tgt_tok, self.greedy
            )
        texts = [self.data.tgt_tok.decode(nbest[0].tokens) for nbest in nbests]
        if not self.greedy.repair_numbers:
            return texts
        return [repair_numbers(source, text) for source, text in zip(sources, texts, strict=True)]

    def _examples_table(self, hypotheses: list[str]) -> str:
        """A few translations, from each corpus when dev mixes several."""
        several = len(set(self.subset_corpora)) > 1
        header = ["corpus"] * several + ["source", "reference", "hypothesis"]
        rows = ["| " + " | ".join(header) + " |", "|---" * len(header) + "|"]
        for index in self.example_rows:
            example = self.bleu_subset[index]
            cells = [self.subset_corpora[index]] * several
            cells += [example["src"], example["tgt"], hypotheses[index]]
            rows.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
        return "\n".join(rows)

    def _attention_images(self) -> list[np.ndarray]:
        """Cross-attention of a few dev sentences, teacher-forced with their references: each
        row is the target piece being predicted, each column a source piece; heads averaged."""
        src_tok, tgt_tok = self.data.src_tok, self.data.tgt_tok
        images = []
        for index in self.attention_examples:
            example = self.bleu_subset[index]
            src_ids = [*example["src_ids"], src_tok.eos_id]
            tgt_out = [*example["tgt_ids"], tgt_tok.eos_id]
            weights = teacher_forced_attention(self.model, src_ids, tgt_out, tgt_tok.bos_id)
            figure = attention_figure(
                weights,
                [src_tok.token_text(token) for token in src_ids],
                [tgt_tok.token_text(token) for token in tgt_out],
                title=f"dev sentence {index + 1}: cross-attention, mean over heads",
            )
            images.append(render(figure))
        return images


def corpus_metric(corpus: str, name: str) -> str:
    """The key of a corpus's own `name` score (`bleu`, `chrf`) in a validation's metrics."""
    return f"{corpus}/{name}"


def per_corpus_metrics(
    hypotheses: list[str], references: list[str], corpora: list[str], language: str, mixed: bool
) -> dict[str, float]:
    """BLEU and chrF of each corpus of `corpora` (the rows'), under `corpus_metric`'s keys, where
    the split they are from `mixed` several corpora; none where it is one corpus."""
    by_corpus = scores_by_corpus(hypotheses, references, corpora, language) if mixed else {}
    if mixed and not by_corpus and corpora:
        # The rows are one corpus's (a dev_corpus with as many dev pairs as dev_bleu_sentences):
        # the split mixes several, so its scores still need its name.
        by_corpus = {corpora[0]: corpus_scores(hypotheses, references, language)}
    metrics = {}
    for corpus, scores in by_corpus.items():
        metrics[corpus_metric(corpus, "bleu")] = scores.bleu
        metrics[corpus_metric(corpus, "chrf")] = scores.chrf
    return metrics


def corpus_figures(metrics: dict[str, float], name: str) -> dict[str, float]:
    """Each corpus's `name` score in `metrics`, in their order; empty for one corpus."""
    suffix = corpus_metric("", name)
    return {
        key.removesuffix(suffix): value
        for key, value in metrics.items()
        if key.endswith(suffix) and key != suffix
    }
