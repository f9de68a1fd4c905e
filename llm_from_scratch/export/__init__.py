"""Export: a checkpoint written out in another inference engine's format (CTranslate2), or as a
🤗 transformers model folder (and such a folder read back), with the tokenizers and a manifest
beside it, so that the exported directory translates on its own.

    ctranslate2_model.py       CTranslate2's model directory, and reading one
    transformers_model.py      a Pegasus / Marian folder, and reading one back (pretrained_state)
    transformers_tokenizer.py  our tokenizers as one `tokenizers` tokenizer.json
    model_card.py              the folder's README.md, in the Hub's format
    length_penalty.py          the exported beam search's stand-in for GNMT's penalty
    hub.py                     uploading the folder to the Hub
"""
