"""The evaluation stage: sacreBLEU scores for Japanese and the evaluation report.

metrics.py  BLEU (ja-mecab), chrF, character BLEU, with their signatures
report.py   metrics.json, hypotheses.txt, BLEU by source length
curves.py   learning curves from TensorBoard logs
"""
