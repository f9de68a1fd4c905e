"""Text as it enters the project, from any side: what is not part of the text is dropped here.

A byte-order mark (U+FEFF) at the start of a file, an argument or a line is a mark of the
encoding, not a character of the sentence: editors (Notepad) write one, shells and web forms
pass it on, and NFKC keeps it, so the model would translate it as a word. `without_bom` drops it
from a text or line (the translator's cleaning: CLI arguments, files, stdin, the API, the sources
of an evaluation); files read as `datasets` tables (training and evaluation corpora) are decoded
as `FILE_ENCODING`, which drops it from the start of the file. Other invisible format characters
(zero-width space and joiners, soft hyphen, U+FEFF within a text) are left to the tokenizer's
normalization, as in training: NFKC keeps them, and they encode as the model learned them.
"""

BOM = "\ufeff"
# UTF-8 that drops a byte-order mark at the start of a file, and reads any UTF-8 file as UTF-8.
FILE_ENCODING = "utf-8-sig"


def without_bom(text: str) -> str:
    """`text` without the byte-order marks it starts with."""
    return text.lstrip(BOM)
