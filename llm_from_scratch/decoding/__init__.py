"""Decoding: batched greedy and beam search with a KV cache (`greedy.py`, `beam.py`), ensembles
of models decoding as one (`ensemble.py`), and text-to-text translation (`translator.py`).

`Translator` is imported from `llm_from_scratch.decoding.translator`, not from here: it needs the
checkpoint loader, which needs `llm_from_scratch.config`, which imports this package's config.
"""

from llm_from_scratch.decoding.beam import beam_search, length_penalty
from llm_from_scratch.decoding.common import Hypothesis
from llm_from_scratch.decoding.config import DecodeConfig
from llm_from_scratch.decoding.ensemble import Ensemble
from llm_from_scratch.decoding.greedy import greedy_search

__all__ = [
    "DecodeConfig",
    "Ensemble",
    "Hypothesis",
    "beam_search",
    "greedy_search",
    "length_penalty",
]
