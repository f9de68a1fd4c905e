"""The decoding stage: batched greedy and beam search with a KV cache, ensembles, translation.

config.py         DecodingConfig, the `decoding` config group
common.py         Hypothesis, the SearchModel protocol, shared search helpers
greedy.py         greedy_search
beam.py           beam_search (GNMT length penalty, n-best)
batched.py        decode_pieces: length-sorted token-budget batches (translation and validation)
ensemble.py       Ensemble: several checkpoints decoding as one model
translator.py     Translator: text in, text out (cleaning, sentences and lines, long input)
lines.py          a text's lines, cleaned, and InputError: what needs no model (nor torch)
number_repair.py  repair_numbers: a translation's changed numbers set back to its source's
"""
