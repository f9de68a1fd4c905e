"""Encoder–decoder Transformer with incremental decoding; see `transformer.py`."""

from llm_from_scratch.model.cache import DecoderCache
from llm_from_scratch.model.config import ModelConfig
from llm_from_scratch.model.transformer import Seq2SeqTransformer

__all__ = ["DecoderCache", "ModelConfig", "Seq2SeqTransformer"]
