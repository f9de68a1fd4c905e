"""Plot runs' learning curves: `python scripts/plot_curves.py runs/default -o curves.png`."""

from llm_from_scratch.programs.plot_curves import run

if __name__ == "__main__":
    run()
