"""The training stage: the loop, optimization, mixed precision, averaging, logging, DDP.

config.py       TrainingConfig, the `training` config group; RunConfig
trainer.py      Trainer: the loop, exact resume, snapshots
validation.py   Validator: dev loss and greedy BLEU during training
optim.py        AdamW groups and schedules
loss.py         label-smoothed cross-entropy
precision.py    bf16 / fp16 / fp32 autocast and its automatic choice
averaging.py    checkpoint averaging
distributed.py  torchrun (DDP) helpers
logging.py      TensorBoard
"""
