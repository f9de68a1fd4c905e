"""Translate English to Japanese: `python scripts/translate.py "Hello." "How are you?"`."""

from llm_from_scratch.programs.translate import run

if __name__ == "__main__":
    run()
