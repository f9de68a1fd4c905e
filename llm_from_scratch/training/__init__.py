"""The training stage: plan, train, hand over the final model. The run, in order, is
`programs/train.py` `run` (decide and plan, prepare once, train, finish); the loop is
`trainer.py`.

plan.py         Plan: what a run trains (schedule, rung, model, tokenizers), one plain value
pacing.py       Pacing: what a budget asks of the loop (a step budget's: nothing)
budget/         the time budget, a layer above the loop: the ladder of recipes (recipe.py),
                BudgetPlanner, the probe (probe.py: timed on a stand-in of the corpus), the
                costs (schedule.py), TimeBudget (timing.py: the re-plan and the deadline)
trainer.py      Trainer: one model, one schedule: the loop, checkpoints, snapshots
learner.py      Learner: the model, optimizer, schedule and loss scaling; the update (a step)
resume.py       the one read of the file a run continues from (SavedRun), and what a resumed
                Trainer restores: last.pt (exact), or a snapshot on request; the snapshots
                newer than it, discarded
finished.py     a finished run: its rerun trains nothing and says where its model is
lock.py         one run per directory: its lock, and the clean-up of what killed writes left
stop.py         SIGTERM/SIGINT: finish the step, save last.pt, exit with the signal's status
final.py        the run's end: the final model (averaging, dev and test scores), hparams
state.py        Progress and every question about a run's state (finished, why, its plan)
config.py       TrainingConfig, the `training` config group; TrainConfig, a run's whole config
validation.py   Validator: dev loss and greedy BLEU during training
tokenizers.py   a run's tokenizers: loaded, or trained on its train split
optim.py        AdamW groups and schedules
loss.py         label-smoothed cross-entropy; the step's module (DDP, compiled)
averaging.py    checkpoint averaging; a snapshot missing from those averaged
distributed.py  torchrun (DDP) helpers; the device and precision a run trains in
report.py       progress bar and log lines; stats.py: step statistics, a step's batches
                (StepBatches; step_batches groups an epoch's, the trainer's and the probe's),
                the non-finite guard, RunLogger (TensorBoard)
profiling.py    training.profile_steps: torch.profiler over a few steps
parent.py       training.init_from: the model a run is fine-tuned from
attention_figure.py  a sentence pair's cross-attention, drawn
"""
