"""Translate English to Japanese: `python scripts/translate.py "Hello." "How are you?"`."""

import sys

from llm_from_scratch.cli import exit_on_user_error
from llm_from_scratch.decoding.translate_cli import main

if __name__ == "__main__":
    with exit_on_user_error():
        sys.exit(main(sys.argv[1:]))
