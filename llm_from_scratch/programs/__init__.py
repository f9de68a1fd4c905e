"""The programs: one module per command, each holding its config schema and its `main`.

They sit on top of the library stages and may import any of them; no library module imports a
program. `scripts/*.py` are one-line entry points into these modules.
"""
