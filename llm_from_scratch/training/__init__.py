"""The training stage: plan, train, hand over the final model.

run.py          train_run: plan, then train, then the final model (what `make train` runs)
planner.py      BudgetPlanner: the Plan before the Trainer is built; a time budget's probe and
                re-plan
budget.py       Schedule, Costs, plan/replan: the step count that fits a time budget
recipe.py       Plan: a schedule and the model, lr and batch size of its recipe
trainer.py      Trainer: one model, one schedule: the loop, checkpoints, snapshots
resume.py       what a resumed Trainer restores: last.pt (exact), or a snapshot on request
stop.py         SIGTERM/SIGINT: finish the step, save last.pt, exit with the signal's status
final.py        the final model: averaging, dev and test scores
state.py        Progress and every question about a run's state (finished, why, its plan)
config.py       TrainingConfig, the `training` config group; TrainConfig, a run's whole config
validation.py   Validator: dev loss and greedy BLEU during training
run_dir.py      one run per directory: its lock, leftovers, a finished run, the file a run
                continues from
tokenizers.py   a run's tokenizers: loaded, or trained on its train split
optim.py        AdamW groups and schedules
loss.py         label-smoothed cross-entropy
averaging.py    checkpoint averaging; a snapshot missing from those averaged
distributed.py  torchrun (DDP) helpers
logging.py      TensorBoard
report.py       progress bar and log lines; stats.py: step statistics and timing
profiling.py    training.profile_steps: torch.profiler over a few steps
"""
