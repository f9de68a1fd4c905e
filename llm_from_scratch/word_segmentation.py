"""Japanese word segmentation as corpora write it (`彼 は 12 歳 だ 。`): the spaces it puts
between words, and removing them. The data stage reads segmented corpora as raw text with it, and
the evaluation stage scores their references both ways."""

from __future__ import annotations

import re
from collections.abc import Sequence

# Letters and digits of Latin script, full-width forms included: a space between two of them
# separates words ("New York", "1 000") and survives detokenization.
_LATIN = r"0-9A-Za-z\u00C0-\u024F\uFF10-\uFF19\uFF21-\uFF3A\uFF41-\uFF5A"
_SEGMENTATION_SPACE = re.compile(rf"(?<![{_LATIN}]) +| +(?![{_LATIN}])")


def detokenize_ja(text: str) -> str:
    """Undo word segmentation: `彼 は 12 歳 だ 。` → `彼は12歳だ。`, keeping `New York`."""
    return _SEGMENTATION_SPACE.sub("", text.strip())


def is_segmented(texts: Sequence[str]) -> bool:
    """Whether Japanese `texts` are word-segmented: most of them have a space that
    `detokenize_ja` would remove. Raw Japanese has such spaces rarely, if ever."""
    segmented = sum(detokenize_ja(text) != text.strip() for text in texts)
    return segmented > len(texts) / 2
