"""For every data setting, a valid value other than the one a test starts from.

The cache-key tests of the data and tokenizer stages are parametrized by `dataclasses.fields`, so a
new setting fails them until it is given a value here, and with it a test of what it keys.
"""

from __future__ import annotations

from typing import Any

import pytest

DATA_VALUES: dict[str, dict[str, Any]] = {
    "corpus": {
        "format": "tsv",
        "splits": {"train": "train", "dev": "dev"},
        "src_lang": "de",
        "tgt_lang": "zh",
        "src_column": "english",
        "tgt_column": "japanese",
        "split_seed": 7,
        "dev_fraction": 0.05,
        "test_fraction": 0.02,
        "detokenize_ja": True,
        "source_style": "lowercase_tokenized",
        "group_column": "document",
        "skip_lines": "^#",
    },
    "cleaning": {"max_tokens": 11, "max_length_ratio": 2.5},
    "loading": {
        "batch_tokens": 8192,
        "pool_size": 8,
        "shuffle_seed": 7,
        "num_workers": 1,
        "num_proc": 2,
        "bpe_dropout": 0.1,
        "static_shapes": "true",
        "shape_step": 16,
        "max_shapes": 8,
    },
}


def other_value(values: dict[str, dict[str, Any]], section: str, name: str, current: Any) -> Any:
    """`values[section][name]`, or the negation of a flag: anything but `current`."""
    if name not in values[section]:
        pytest.fail(f"tests/settings.py has no value for {section}.{name}: add one")
    value = (not current) if isinstance(current, bool) else values[section][name]
    assert value != current, f"{section}.{name} is already {value!r}"
    return value
