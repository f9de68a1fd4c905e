"""The evaluation stage: sacreBLEU scores (of Japanese or English) and the evaluation report.

metrics.py  BLEU (ja-mecab or 13a, by target language), chrF, character BLEU, with signatures
report.py   metrics.json, hypotheses.txt, BLEU by source length
curves.py   learning curves from TensorBoard logs
"""
