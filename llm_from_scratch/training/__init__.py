"""The training stage: the loop, optimization, averaging, logging, DDP.

config.py       TrainingConfig, the `training` config group; RunConfig
trainer.py      Trainer: the loop, exact resume, snapshots
validation.py   Validator: dev loss and greedy BLEU during training
optim.py        AdamW groups and schedules
loss.py         label-smoothed cross-entropy
averaging.py    checkpoint averaging
distributed.py  torchrun (DDP) helpers
logging.py      TensorBoard
"""
