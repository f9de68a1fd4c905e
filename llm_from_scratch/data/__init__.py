"""The data stage: corpora in, token-budget `Batch`es out.

    config.py      DataConfig, the `data` config group (corpus, cleaning, loading sections)
    sources.py     fetch raw files (download or mirror)
    corpus.py      read a split through `datasets` (`load_split`), detokenize Japanese
    mixture.py     several corpora in one run: one style, a `corpus` column, deduplication,
                   held-out overlap removed, resampling by weight or temperature
    raw_style.py   lowercased, tokenized English back to raw text (`to_raw`, `Truecaser`)
    cleaning.py    tokenize, drop empty / too long / badly proportioned pairs, `CleaningReport`
    batching.py    `TokenBudgetBatchSampler`: length-bucketed, seeded, resumable, DDP-aware
    batch.py       `Batch` and `Collator` (padding, BOS/EOS shift, masks)
    datamodule.py  `build_data(...) -> DataModule`, with the on-disk tokenization cache
    source_style.py  a corpus's source conventions, applied to its sentences and to user input
    sentences.py   `split_sentences`: a line of English or Japanese into its sentences
    back_translation.py  a back-translated corpus on disk: tagged pairs, lineage, resumable

It needs a tokenizer only through the `protocols.Tokenizer` interface, so it does not import the
tokenizer stage.
"""
