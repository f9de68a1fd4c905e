"""A run's plan, and the time budget (`training.max_time`) that can fix it.

schedule.py   Schedule, Costs, plan/replan, Deadline: the step count that fits a time budget
recipe.py     Plan: a schedule and the model, lr and batch size of its recipe
planner.py    BudgetPlanner: the Plan before the Trainer is built; the probe and the re-plan
timing.py     RunTiming: the run's own step time, which the re-plan and the deadline use
"""
