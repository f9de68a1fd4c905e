"""The model stage: an encoder–decoder Transformer with incremental decoding.

    config.py       ModelConfig, the `model` config group
    masks.py        bool masks, True = may attend
    attention.py    multi-head attention with a key/value cache
    dropout.py      Dropout with a cheaper CPU mask, and the residual sum in one pass
    layers.py       embeddings, encoder and decoder layers
    transformer.py  Seq2SeqTransformer
    cache.py        DecoderCache, the state of incremental decoding

Like every stage package, this one re-exports nothing: import names from their modules.
"""
