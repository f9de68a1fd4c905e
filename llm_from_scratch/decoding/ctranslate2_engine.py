"""Greedy and beam search with CTranslate2, on a directory `make export` wrote.

`CTranslate2Model.decode_pieces` is `batched.decode_pieces` for this engine: source ids in,
n-best `Hypothesis` lists out, so the `Translator` around it (cleaning, splitting, joining) is
the same for both engines. The settings map onto CTranslate2's as follows:
- source ids + <eos> as tokens; the decoder starts from <bos> (the export's config);
- <bos> and <pad> are never outputs (`suppress_sequences`); an empty output may end at once
  (`min_decoding_length=0`); no input truncation;
- the length limit a * (src_len + 1) + b (`common.output_limits`) is per sentence, CTranslate2's
  `max_decoding_length` per call: pieces are decoded in groups of one limit;
- greedy search scores the summed log-probability, as here. Beam search normalizes differently:
  CTranslate2 divides a finished hypothesis's log-probability by L^α (L: its tokens, EOS
  counted, as `return_end_token` makes it) and stops a sentence once beam_size hypotheses have
  finished; this project divides by GNMT's ((5 + L) / 6)^α (EOS counted) and stops when no open
  beam can win. With α = 0 both are the plain log-probability and stop when the best hypothesis
  is finished: the same search, down to the best hypothesis (the rest of an n-best list may
  differ: CTranslate2 stops as soon as n hypotheses have finished). With α > 0, a group of
  sources of n tokens (+ EOS) gets CTranslate2's α' = α (n + 1) / (n + 6), at which L^α' grows
  at GNMT's rate at L = n + 1, an output as long as its source: the two penalties agree to first
  order there, not exactly, and the scores are on CTranslate2's scale.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from llm_from_scratch.data.batch import encode_sources
from llm_from_scratch.decoding.common import Hypothesis, output_limits
from llm_from_scratch.decoding.config import DecodingConfig
from llm_from_scratch.export.ctranslate2_model import (
    import_ctranslate2,
    load_tokenizers,
    read_manifest,
    vocabulary,
)
from llm_from_scratch.model.config import ModelConfig
from llm_from_scratch.schema import to_schema
from llm_from_scratch.tokenizer.special_tokens import BOS, PAD

ENGINES = ("torch", "ctranslate2")


class CTranslate2Model:
    """An exported model loaded into `ctranslate2.Translator`, with its tokenizers and manifest.

    device: cpu, cuda or auto; compute_type: CTranslate2's (default: the type it was exported
    in, e.g. int8); threads: CPU threads per translation (0: torch's `get_num_threads()`).
    """

    def __init__(
        self,
        directory: str | Path,
        device: str = "cpu",
        compute_type: str = "default",
        threads: int = 0,
    ) -> None:
        ctranslate2 = import_ctranslate2()
        self.directory = Path(directory)
        self.manifest = read_manifest(directory)
        self.src_tok, self.tgt_tok = load_tokenizers(directory, self.manifest)
        self.config: dict[str, Any] = self.manifest["config"]
        self.cfg = to_schema(self.config["model"], ModelConfig)
        self.device = "cuda" if device.startswith("cuda") else device
        if self.device == "auto":
            self.device = "cuda" if ctranslate2.get_cuda_device_count() > 0 else "cpu"
        self.translator = ctranslate2.Translator(
            str(directory),
            device=self.device,
            compute_type=compute_type,
            intra_threads=threads or torch.get_num_threads(),
        )
        self.compute_type = compute_type
        self.src_tokens = vocabulary(self.src_tok)
        self.tgt_tokens = vocabulary(self.tgt_tok)
        self.tgt_ids = {token: token_id for token_id, token in enumerate(self.tgt_tokens)}
        self.src_eos = self.src_tokens[self.src_tok.eos_id]

    def decode_pieces(
        self, pieces: Sequence[Sequence[int]], cfg: DecodingConfig
    ) -> list[list[Hypothesis]]:
        """The n-best hypotheses of each source (token ids without EOS), in the sources' order."""
        results: list[list[Hypothesis]] = [[] for _ in pieces]
        for limit, positions in self._by_limit(pieces, cfg).items():
            outputs = self.translator.translate_batch(
                [self._source(pieces[i]) for i in positions],
                max_batch_size=cfg.batch_tokens,
                batch_type="tokens",
                beam_size=cfg.beam_size,
                num_hypotheses=cfg.nbest,
                length_penalty=self._length_penalty(cfg, positions, pieces),
                no_repeat_ngram_size=cfg.no_repeat_ngram_size,
                suppress_sequences=[[BOS], [PAD]],
                max_input_length=0,
                max_decoding_length=limit,
                min_decoding_length=0,
                return_scores=True,
                return_end_token=True,
            )
            for position, output in zip(positions, outputs, strict=True):
                results[position] = [
                    self._hypothesis(tokens, score, limit)
                    for tokens, score in zip(output.hypotheses, output.scores, strict=True)
                ]
        return results

    def cross_attention(self, src_ids: Sequence[int], tgt_out: Sequence[int]) -> list[list[float]]:
        """(len(tgt_out), len(src_ids)): the last decoder layer's cross-attention, heads
        averaged, of `tgt_out` forced as the output for the source `src_ids` (its EOS included)."""
        forced = [self.tgt_tokens[token] for token in tgt_out]
        output = self.translator.translate_batch(
            [[self.src_tokens[token] for token in src_ids]],
            target_prefix=[forced[:-1]],
            beam_size=1,
            max_input_length=0,
            max_decoding_length=len(forced),
            min_decoding_length=0,
            return_attention=True,
            return_end_token=True,
        )[0]
        return [list(row) for row in output.attention[0][: len(forced)]]

    @staticmethod
    def _length_penalty(
        cfg: DecodingConfig, positions: list[int], pieces: Sequence[Sequence[int]]
    ) -> float:
        """CTranslate2's α for sources of one output limit (see the module's docstring)."""
        if cfg.beam_size == 1:
            return 0.0  # greedy search: the plain log-probability, as here
        length = max(len(pieces[position]) for position in positions) + 1  # + EOS
        return cfg.length_penalty * length / (length + 5)

    def _source(self, ids: Sequence[int]) -> list[str]:
        return [*(self.src_tokens[token] for token in ids), self.src_eos]

    def _by_limit(
        self, pieces: Sequence[Sequence[int]], cfg: DecodingConfig
    ) -> dict[int, list[int]]:
        """Positions of `pieces` grouped by their output limit, as the torch searches set it."""
        if not pieces:
            return {}
        _, src_mask = encode_sources(pieces, self.src_tok)
        limits = output_limits(src_mask, cfg.max_len_a, cfg.max_len_b, self.cfg.max_positions)
        groups: dict[int, list[int]] = defaultdict(list)
        for position, limit in enumerate(limits.tolist()):
            groups[limit].append(position)
        return groups

    def _hypothesis(self, tokens: list[str], score: float, limit: int) -> Hypothesis:
        ids = [self.tgt_ids[token] for token in tokens]
        ended = bool(ids) and ids[-1] == self.tgt_tok.eos_id
        return Hypothesis(
            tokens=ids[:-1] if ended else ids,
            score=float(score),
            hit_max_len=not ended and len(ids) >= limit,
        )
