"""Periodic validation: dev loss and perplexity, and BLEU/chrF of greedy translations."""

from __future__ import annotations

import math

import torch

from llm_from_scratch.config import TrainConfig
from llm_from_scratch.data.batch import encode_sources
from llm_from_scratch.data.datamodule import DataModule
from llm_from_scratch.decoding.greedy import greedy_search
from llm_from_scratch.evaluation.metrics import corpus_scores
from llm_from_scratch.model import Seq2SeqTransformer
from llm_from_scratch.training.logging import RunLogger
from llm_from_scratch.training.loss import summed_cross_entropy
from llm_from_scratch.training.precision import Precision

EXAMPLES_SHOWN = 5  # dev sentences whose translations are logged at every evaluation
DECODE_BATCH_SENTENCES = 64


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
        self.decode_cfg = config.decode
        dev = data.splits["dev"]
        self.bleu_subset = dev.select(range(min(config.trainer.dev_bleu_sentences, len(dev))))

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
        hypotheses = self.translate(self.bleu_subset["src_ids"])
        references = self.bleu_subset["tgt"]
        scores = corpus_scores(hypotheses, references)
        metrics = {
            "loss": loss / max(tokens, 1),
            "perplexity": math.exp(min(loss / max(tokens, 1), 50.0)),
            "bleu": scores.bleu,
            "chrf": scores.chrf,
        }
        log.scalars({f"{tag}/{name}": value for name, value in metrics.items()}, step)
        log.text(f"{tag}/examples", self._examples_table(hypotheses), step)
        self._log_attention(log, step, tag)
        self.model.train()
        return metrics

    def translate(self, src_ids: list[list[int]]) -> list[str]:
        """Greedy translations of tokenized sources, in their order, decoded in length-sorted
        chunks so that little of each batch is padding."""
        order = sorted(range(len(src_ids)), key=lambda i: len(src_ids[i]))
        translations: list[str] = [""] * len(src_ids)
        for start in range(0, len(order), DECODE_BATCH_SENTENCES):
            chunk = order[start : start + DECODE_BATCH_SENTENCES]
            src, src_mask = encode_sources([src_ids[i] for i in chunk], self.data.src_tok)
            with self.precision.autocast():
                hypotheses = greedy_search(
                    self.model,
                    src.to(self.precision.device),
                    src_mask.to(self.precision.device),
                    self.data.tgt_tok,
                    max_len_a=self.decode_cfg.max_len_a,
                    max_len_b=self.decode_cfg.max_len_b,
                )
            for index, hypothesis in zip(chunk, hypotheses, strict=True):
                translations[index] = self.data.tgt_tok.decode(hypothesis.tokens)
        return translations

    def _examples_table(self, hypotheses: list[str]) -> str:
        rows = ["| source | reference | hypothesis |", "|---|---|---|"]
        for index in range(min(EXAMPLES_SHOWN, len(hypotheses))):
            cells = (
                self.bleu_subset[index]["src"],
                self.bleu_subset[index]["tgt"],
                hypotheses[index],
            )
            rows.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
        return "\n".join(rows)

    def _log_attention(self, log: RunLogger, step: int, tag: str) -> None:
        """Last decoder layer's cross-attention, averaged over heads, for the first dev sentence."""
        example = self.bleu_subset[0]
        tgt_tok, device = self.data.tgt_tok, self.precision.device
        src = torch.tensor([[*example["src_ids"], self.data.src_tok.eos_id]], device=device)
        tgt_in = torch.tensor([[tgt_tok.bos_id, *example["tgt_ids"]]], device=device)
        src_mask = torch.ones_like(src, dtype=torch.bool)
        memory = self.model.encode(src, src_mask)
        _, weights = self.model.decode(tgt_in, memory, src_mask, need_weights=True)
        # (layers, batch, heads, tgt_len, src_len) → (tgt_len, src_len)
        log.heatmap(f"{tag}/cross_attention", weights[-1, 0].mean(0), step)
