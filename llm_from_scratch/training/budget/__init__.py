"""A run's plan, and the time budget (`training.max_time`) that can fix it.

schedule.py   Schedule, Costs, plan/replan, Deadline: the step count that fits a time budget
recipe.py     Plan: a schedule and the model, tokenizers, lr and batch size of its recipe
planner.py    BudgetPlanner: the Plan before any tokenizer is trained; the re-plan
probe.py      the probe: a Learner's updates, a validation and a save, timed on a stand-in
              of the corpus (stand_in.py)
timing.py     Budget: what the budget asks of the loop (a step budget: nothing; TimeBudget:
              the run's own step time, the re-plan and the deadline)
"""
