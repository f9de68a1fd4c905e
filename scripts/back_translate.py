"""Back-translate monolingual text into tagged synthetic pairs with a reverse model:
`.venv/bin/python scripts/back_translate.py --run ja_en --data wikinews_ja`."""

try:
    from llm_from_scratch.programs.back_translate import run
except ModuleNotFoundError as missing:  # a Python outside the project's .venv
    from _environment import explain_and_exit

    explain_and_exit(missing)

if __name__ == "__main__":
    run()
