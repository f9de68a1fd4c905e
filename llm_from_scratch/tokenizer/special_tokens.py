"""The names of the reserved special tokens: the one place they are defined.

Their ids come from the tokenizer object (`tok.pad_id`, `tok.bos_id`, `tok.eos_id`); a trained
tokenizer gives them the first ids, in this order, followed by any user-defined special tokens.
Special tokens are whole tokens: `encode` never produces them from plain text (the string "<eos>"
in a sentence is encoded as ordinary characters) and `decode` leaves them out.
"""

PAD = "<pad>"
BOS = "<bos>"
EOS = "<eos>"

RESERVED = (PAD, BOS, EOS)
