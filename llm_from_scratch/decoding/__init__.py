"""The decoding stage: batched greedy and beam search with a KV cache, ensembles, translation.

config.py              DecodingConfig, the `decoding` config group
common.py              Hypothesis, the SearchModel (engine) and StepModel protocols, search helpers
greedy.py              greedy_search
beam.py                beam_search (GNMT length penalty, n-best)
batched.py             decode_pieces: length-sorted token-budget batches (translation, validation)
ensemble.py            Ensemble: several checkpoints decoding as one model
torch_engine.py        TorchModel: a model or an ensemble as a SearchModel; teacher_forced_attention
ctranslate2_engine.py  CTranslate2Model: an export's engine as a SearchModel
loading.py             a run's models (checkpoints, exports) and its data and decoding settings
conventions.py         TextConventions: how a run reads and writes text (direction, style, joiner)
segmentation.py        a text into sentences and the pieces the model takes (pure functions)
reranking.py           Reranker: the search policy over hypothesis lists (numbers, loops)
translator.py          Translator: text in, text out (orchestration and assembly)
lines.py               a text's lines, cleaned, and InputError: what needs no model (nor torch)
number_repair.py       repair_numbers: a translation's changed numbers set back to its source's
"""
