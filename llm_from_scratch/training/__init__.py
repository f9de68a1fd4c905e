"""The training stage: plan, train, hand over the final model.

run.py          train_run: plan, then train, then the final model (what `make train` runs)
budget/         the plan and the time budget: Schedule and its costs, Plan (recipe.py),
                BudgetPlanner (the probe and the re-plan), RunBudget (while the run trains)
trainer.py      Trainer: one model, one schedule: the loop, checkpoints, snapshots
resume.py       the one read of the file a run continues from (SavedRun), and what a resumed
                Trainer restores: last.pt (exact), or a snapshot on request
finished.py     a finished run: its rerun trains nothing and says where its model is
lock.py         one run per directory: its lock, and the clean-up of what killed writes left
stop.py         SIGTERM/SIGINT: finish the step, save last.pt, exit with the signal's status
final.py        the final model: averaging, dev and test scores
state.py        Progress and every question about a run's state (finished, why, its plan)
config.py       TrainingConfig, the `training` config group; TrainConfig, a run's whole config
validation.py   Validator: dev loss and greedy BLEU during training
tokenizers.py   a run's tokenizers: loaded, or trained on its train split
optim.py        AdamW groups and schedules
loss.py         label-smoothed cross-entropy
averaging.py    checkpoint averaging; a snapshot missing from those averaged
distributed.py  torchrun (DDP) helpers
logging.py      TensorBoard
report.py       progress bar and log lines; stats.py: step statistics
profiling.py    training.profile_steps: torch.profiler over a few steps
parent.py       training.init_from: the model a run is fine-tuned from
attention_figure.py  a sentence pair's cross-attention, drawn
"""
