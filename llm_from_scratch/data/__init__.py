"""The data stage: corpora in, token-budget `Batch`es out.

    sources.py     fetch raw files (download or mirror)
    corpus.py      read a split through `datasets` (`load_split`), detokenize Japanese
    cleaning.py    tokenize, drop empty / too long / badly proportioned pairs, `CleaningReport`
    batching.py    `TokenBudgetBatchSampler`: length-bucketed, seeded, resumable, DDP-aware
    batch.py       `Batch` and `Collator` (padding, BOS/EOS shift, masks)
    datamodule.py  `build_data(cfg, tok_cfg) -> DataModule`, with the on-disk tokenization cache

Nothing is re-exported here: importing `datasets` and `torch` takes seconds, and `sources` (used
by `make data`) needs neither.
"""
