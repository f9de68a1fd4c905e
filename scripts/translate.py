"""Translate English to Japanese: `python scripts/translate.py "Hello." "How are you?"`."""

import sys

from llm_from_scratch.cli import exit_on_user_error, import_stage

if __name__ == "__main__":
    with exit_on_user_error():
        sys.exit(import_stage("decoding.translate_cli", "decoding").main(sys.argv[1:]))
