"""Greedy and beam search with CTranslate2, on a directory `make export` wrote.

`CTranslate2Model` is a `SearchModel` as the torch engine's `TorchModel` is: its `decode_pieces`
takes source ids and gives n-best `Hypothesis` lists, so the `Translator` around it (cleaning,
splitting, joining) is the same for both engines. The settings map onto CTranslate2's as follows:
- source ids + <eos> as tokens; the decoder starts from <bos> (the export's config);
- <bos> and <pad> are never outputs (`suppress_sequences`); an empty output may end at once
  (`min_decoding_length=0`); no input truncation;
- the length limit a * (src_len + 1) + b (`common.output_limits`) is per sentence, CTranslate2's
  `max_decoding_length` per call: a call runs to the longest limit of its sources, and the few
  whose search reached its own limit are searched again with it (`_ended_before`), which gives
  each sentence the output of its own limit;
- `no_repeat_ngram_size` is CTranslate2's own ban, which spares no number: where a number
  repeats an n-gram of digits (1998 after 1995, 10000), its outputs may differ from torch's;
- greedy search scores the summed log-probability, as here. Beam search normalizes differently:
  CTranslate2 divides a finished hypothesis's log-probability by L^α (L: its tokens, EOS
  counted, as `return_end_token` makes it) and stops a sentence once beam_size hypotheses have
  finished; this project divides by GNMT's ((5 + L) / 6)^α (EOS counted) and stops when no open
  beam can win. With α = 0 both rank by the plain log-probability and agree on the best
  hypothesis (the rest of an n-best list may differ). With α > 0, sources whose n + 1 tokens lie
  in [2^c, 2^(c+1)) get α' = α L₀ / (L₀ + 5), L₀ = 1.5 * 2^c: L^α' then grows at GNMT's rate at
  L = L₀, an output about as long as its source. The penalties agree to first order there, not
  exactly, and the scores are on CTranslate2's scale.

On a CPU with several threads the model is loaded as one single-threaded worker per core, and
each call's sources are cut into as many batches for each worker (`worker_batch`); on a GPU,
or with one thread, it is one worker. `per_core_workers = False` runs the searches on one
worker with every thread instead: the benchmark's reference.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch

from llm_from_scratch.data.batch import encode_sources
from llm_from_scratch.decoding.common import Attention, Hypothesis, output_limits, ranked
from llm_from_scratch.decoding.config import DecodingConfig
from llm_from_scratch.errors import ConfigError
from llm_from_scratch.export.ctranslate2_model import (
    check_model_file,
    import_ctranslate2,
    load_tokenizers,
    read_manifest,
    vocabulary,
)
from llm_from_scratch.model.config import ModelConfig
from llm_from_scratch.schema import to_schema
from llm_from_scratch.tokenizer.special_tokens import BOS, PAD

NO_PENALTY = 1e-9
# At most this many search rows (sources × beam) per batch when batches run side by side on
# single-threaded workers: enough to amortize a step's overhead; a call of fewer sources is
# shared evenly, so that every worker gets a batch.
WORKER_ROWS = 160


class CTranslate2Model:
    """An exported model loaded into `ctranslate2.Translator`, with its tokenizers and manifest.

    device: cpu, cuda or auto; compute_type: CTranslate2's (default: the type it was exported
    in, e.g. int8); threads: CPU threads per translation (0: torch's `get_num_threads()`).
    """

    name = "ctranslate2"
    autocasts = False  # its compute type (e.g. int8) was set when it loaded

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
        check_model_file(directory, self.manifest)
        self.src_tok, self.tgt_tok = load_tokenizers(directory, self.manifest)
        self.config: dict[str, Any] = self.manifest["config"]
        self.cfg = to_schema(self.config["model"], ModelConfig)
        kind, _, index = device.partition(":")  # cuda:1 → cuda, device 1
        if kind not in ("auto", "cpu", "cuda") or not (index.isdigit() or not index):
            raise ConfigError(
                f"device={device!r}: the CTranslate2 engine takes auto, cpu or cuda:N"
            )
        if kind == "auto":
            kind = "cuda" if ctranslate2.get_cuda_device_count() > 0 else "cpu"
        self.device = torch.device(kind)
        self.threads = threads or torch.get_num_threads()
        # On a CPU the searches run as batches side by side, one single-threaded worker per core:
        # a decoding step of a model this size is too little work to share between threads,
        # which then wait on each other more than they compute (docs/benchmarks.md).
        per_core = kind == "cpu" and self.threads > 1
        self.translator = _loaded(
            directory,
            device=kind,
            device_index=int(index or 0),
            compute_type=compute_type,
            inter_threads=self.threads if per_core else 1,
            intra_threads=1 if per_core else self.threads,
        )
        self.workers = self.threads if per_core else 1
        self._one_worker: Any = None
        # False: every search runs on one worker with all the threads (the reference the
        # benchmark times the per-core workers against).
        self.per_core_workers = True
        self.compute_type = compute_type
        self.src_tokens = vocabulary(self.src_tok)
        self.tgt_tokens = vocabulary(self.tgt_tok)
        self.tgt_ids = {token: token_id for token_id, token in enumerate(self.tgt_tokens)}
        self.src_eos = self.src_tokens[self.src_tok.eos_id]

    def decode_pieces(
        self, pieces: Sequence[Sequence[int]], cfg: DecodingConfig
    ) -> list[list[Hypothesis]]:
        """The n-best hypotheses of each source (token ids without EOS), in the sources' order."""
        if not pieces:
            return []
        _, src_mask = encode_sources(pieces, self.src_tok)
        limits = output_limits(src_mask, cfg.max_len_a, cfg.max_len_b, self.cfg.max_positions)
        limits = limits.tolist()
        results: list[list[Hypothesis]] = [[] for _ in pieces]
        classes = by_length_class(pieces, cfg.beam_size)
        first = [(positions, max(limits[i] for i in positions)) for positions in classes.values()]
        redo: dict[tuple[int, int], list[int]] = defaultdict(list)  # (class, limit) -> positions
        for length_class, (positions, _), searched in zip(
            classes, first, self._search(pieces, first, cfg), strict=True
        ):
            for position, nbest in zip(positions, searched, strict=True):
                if _ended_before(nbest, limits[position], cfg.beam_size):
                    results[position] = ranked(nbest, cfg.prefer_finished)[: cfg.nbest]
                else:
                    redo[length_class, limits[position]].append(position)
        again = [(positions, limit) for (_, limit), positions in redo.items()]
        for (positions, _), searched in zip(again, self._search(pieces, again, cfg), strict=True):
            for position, nbest in zip(positions, searched, strict=True):
                results[position] = ranked(nbest, cfg.prefer_finished)[: cfg.nbest]
        return results

    def _search(
        self,
        pieces: Sequence[Sequence[int]],
        searches: Sequence[tuple[list[int], int]],
        cfg: DecodingConfig,
    ) -> list[list[list[Hypothesis]]]:
        """For each (positions, limit), every finished hypothesis of each source, best first.

        The searches are one `translate_batch` call each, all queued before any is awaited: the
        workers go on to the next search's batches as they come free, instead of waiting at the
        end of each search for its slowest batch."""
        queued = [
            (limit, self._queue(pieces, positions, cfg, limit)) for positions, limit in searches
        ]
        return [
            [
                [
                    self._hypothesis(tokens, score, limit)
                    for tokens, score in zip(output.hypotheses, output.scores, strict=True)
                ]
                for output in (result.result() for result in results)
            ]
            for limit, results in queued
        ]

    def _queue(
        self, pieces: Sequence[Sequence[int]], positions: list[int], cfg: DecodingConfig, limit: int
    ) -> list[Any]:
        """The search of `pieces` at `positions` up to `limit` tokens, queued: CTranslate2's
        `AsyncTranslationResult` of each source."""
        if self.on_workers():
            translator = self.translator
            batching = {
                "max_batch_size": worker_batch(len(positions), self.workers, cfg),
                "batch_type": "examples",
            }
        else:
            translator = self.one_worker() if self.workers > 1 else self.translator
            batching = {"max_batch_size": cfg.batch_tokens, "batch_type": "tokens"}
        return translator.translate_batch(
            [self._source(pieces[i]) for i in positions],
            **batching,
            beam_size=cfg.beam_size,
            num_hypotheses=cfg.beam_size,
            length_penalty=_length_penalty(cfg, len(pieces[positions[0]])),
            no_repeat_ngram_size=cfg.no_repeat_ngram_size,
            suppress_sequences=[[BOS], [PAD]],
            max_input_length=0,
            max_decoding_length=limit,
            min_decoding_length=0,
            return_scores=True,
            return_end_token=True,
            asynchronous=True,
        )

    def on_workers(self) -> bool:
        """Whether searches run on one single-threaded worker per core (a multi-core CPU, unless
        `per_core_workers` is off)."""
        return self.workers > 1 and self.per_core_workers

    def one_worker(self) -> Any:
        """The model again, as one worker with all the threads (built on first use): the
        benchmark's reference for the per-core workers."""
        if self._one_worker is None:
            self._one_worker = _loaded(
                self.directory,
                device="cpu",
                compute_type=self.translator.compute_type,
                intra_threads=self.threads,
            )
        return self._one_worker

    def attention(self, src_ids: Sequence[int], tgt_out: Sequence[int]) -> Attention:
        """The last decoder layer's cross-attention alone: CTranslate2 returns no other."""
        weights = torch.tensor([self.cross_attention(src_ids, tgt_out)])
        return Attention([self.cfg.n_decoder_layers], weights)

    def call_between_steps(self, hook: Callable[[], None]) -> None:
        """Never called: a batch decodes in one call, so it can only be dropped before it
        starts."""

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

    def _source(self, ids: Sequence[int]) -> list[str]:
        return [*(self.src_tokens[token] for token in ids), self.src_eos]

    def _hypothesis(self, tokens: list[str], score: float, limit: int) -> Hypothesis:
        ids = [self.tgt_ids[token] for token in tokens]
        ended = bool(ids) and ids[-1] == self.tgt_tok.eos_id
        return Hypothesis(
            tokens=ids[:-1] if ended else ids,
            score=float(score),
            hit_max_len=not ended and len(ids) >= limit,
        )


def _loaded(directory: Path | str, **options: Any) -> Any:
    """`ctranslate2.Translator(directory, **options)`, torch's thread count left as it was:
    CTranslate2 sets the calling thread's OpenMP threads to `intra_threads`, which torch shares,
    so torch, and the next model loaded, would otherwise run on that many threads."""
    threads = torch.get_num_threads()
    translator = import_ctranslate2().Translator(str(directory), **options)
    torch.set_num_threads(threads)
    return translator


def by_length_class(pieces: Sequence[Sequence[int]], beam_size: int) -> dict[int, list[int]]:
    """Positions of `pieces` by length class (sources of n + 1 tokens with EOS in [2^c, 2^(c+1))):
    the searches of one class share a call and, for beam search, a length penalty."""
    classes: dict[int, list[int]] = defaultdict(list)
    for position, piece in enumerate(pieces):
        classes[(len(piece) + 1).bit_length() if beam_size > 1 else 0].append(position)
    return classes


def worker_batch(sources: int, workers: int, cfg: DecodingConfig) -> int:
    """Sources per batch on `workers` per-core workers: the call's `sources` in the fewest batches
    of at most `WORKER_ROWS` search rows that give every worker as many batches, so that none
    waits on another's last batch."""
    most = max(1, WORKER_ROWS // cfg.beam_size)
    batches = math.ceil(math.ceil(sources / most) / workers) * workers
    return math.ceil(sources / batches)


def _length_penalty(cfg: DecodingConfig, length: int) -> float:
    """CTranslate2's α for sources of `length` tokens' class (see the module's docstring)."""
    if cfg.beam_size == 1:
        return 0.0  # greedy search: the plain log-probability, as here
    if cfg.length_penalty == 0:
        # As good as 0 for the scores, but it turns off CTranslate2's early exit, so that every
        # search runs until beam_size hypotheses have finished, as `_ended_before` assumes.
        return NO_PENALTY
    typical = 1.5 * 2 ** ((length + 1).bit_length() - 1)  # the middle of the length class
    return cfg.length_penalty * typical / (typical + 5)


def _ended_before(nbest: list[Hypothesis], limit: int, beam_size: int) -> bool:
    """Whether a search run to a longer limit ended as one run to `limit` would have.

    Greedy search does not depend on the limit until it reaches it. Beam search ended at the
    step its last hypothesis finished; the list holds every finished one (up to beam_size, and
    always one of those that finished last), so the longest, EOS counted, tells that step.
    """
    lengths = [len(h.tokens) + (not h.hit_max_len) for h in nbest]
    if beam_size == 1:
        return not nbest[0].hit_max_len and lengths[0] <= limit
    return all(not h.hit_max_len for h in nbest) and max(lengths) < limit
