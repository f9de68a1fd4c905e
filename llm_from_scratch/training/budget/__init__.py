"""A run's plan, and the time budget (`training.max_time`) that can fix it.

schedule.py   Schedule, Costs, plan/replan, Deadline: the step count that fits a time budget
recipe.py     Plan: a schedule and the model, lr and batch size of its recipe; its tokenizers
planner.py    BudgetPlanner: the Plan before the Trainer is built; the probe and the re-plan
timing.py     Budget: what the budget asks of the loop (a step budget: nothing; TimeBudget:
              the run's own step time, the re-plan and the deadline)
"""
