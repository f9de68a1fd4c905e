"""Tests of the encoder–decoder Transformer (`llm_from_scratch.model`)."""
