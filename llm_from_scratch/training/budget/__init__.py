"""The time budget (`training.max_time`): the layer above the training loop that decides a
run's `plan.Plan` (its rung and steps) and paces the loop while it trains. Nothing below imports
it.

schedule.py   Costs, plan/replan, Deadline: the step count that fits a time budget
recipe.py     the ladder of recipes and the rule that picks a rung from a budget's compute
planner.py    BudgetPlanner: the Plan before any tokenizer is trained, its Pacing; the re-plan
probe.py      the probe: a Learner's updates, a validation and a save, timed on a stand-in
              of the corpus (stand_in.py)
timing.py     TimeBudget: the pacing of a budgeted run: its own step, validation and save
              times, the re-plan and the deadline
"""
