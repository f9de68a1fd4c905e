"""The evaluation stage: sacreBLEU scores (of Japanese or English) and the evaluation report.

metrics.py  BLEU (ja-mecab or 13a, by target language), chrF, character BLEU, with signatures
scores.py   the scores of metrics.json, of a split and of each of its corpora
report.py   metrics.json, hypotheses.txt, BLEU by source length, the printed summary
corpora.py  splits of several corpora: an even spread of their rows, scores per corpus
fidelity.py number fidelity (numbers as `llm_from_scratch/numbers.py` finds them) and the loop count
curves.py   learning curves from TensorBoard logs
"""
