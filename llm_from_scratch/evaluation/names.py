"""Names rendered: whether a translation writes the source's names as its reference does.

A source's names are its runs of capitalized words, each cut into the longest spans (up to four
words) that the name dictionary (name_dictionary.py: JMnedict, and JMdict's proper nouns)
knows as written (`Tamil Nadu`, else `Tamil`); loanwords in lowercase (`test`) are not names.
A name counts where one of its renderings occurs in the reference (so `Sunday`, which JMnedict
renders サンデー and a reference writes 日曜日, does not), and is rendered where the hypothesis
holds one of those. Middle dots and spaces are ignored (タミル・ナードゥ is タミルナードゥ). A name
counts once per sentence however often it occurs.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from llm_from_scratch.name_dictionary import NameDictionary

# A run of capitalized words (`White House`, `Larry Kudlow`), none part of a longer word.
_CAPITALIZED_RUN = re.compile(
    r"(?<![\w'’-])[A-Z][A-Za-z'’.-]*[A-Za-z](?: [A-Z][A-Za-z'’.-]*[A-Za-z])*(?![\w'’-])"
)
_POSSESSIVE = re.compile(r"(?<=[A-Za-z])['’]s\b")
MAX_NAME_WORDS = 4
_IGNORED = str.maketrans("", "", "・ \u3000")


@dataclass
class NameFidelity:
    names: int  # source names with a rendering in their reference
    rendered: int  # of those, rendered so in the hypothesis

    @property
    def share(self) -> float | None:
        """rendered / names; None when no reference holds a source name's rendering."""
        return self.rendered / self.names if self.names else None

    def to_dict(self) -> dict[str, float | int | None]:
        return {"share": self.share, "names": self.names, "rendered": self.rendered}


def source_names(source: str, dictionary: NameDictionary) -> list[str]:
    """The names of `source` that the dictionary knows, in order, each once (see the module
    docstring)."""
    found: list[str] = []
    for run in _CAPITALIZED_RUN.finditer(_POSSESSIVE.sub("", source)):
        words, start = run.group().split(" "), 0
        while start < len(words):
            for end in range(min(len(words), start + MAX_NAME_WORDS), start, -1):
                name = " ".join(words[start:end])
                if dictionary.renderings(name, loanwords=False):
                    if name not in found:
                        found.append(name)
                    start = end
                    break
            else:
                start += 1
    return found


def name_fidelity(
    sources: Sequence[str],
    hypotheses: Sequence[str],
    references: Sequence[str],
    dictionary: NameDictionary,
) -> NameFidelity:
    """How many of the sources' names the hypotheses render as the references do."""
    names = rendered = 0
    for source, hypothesis, reference in zip(sources, hypotheses, references, strict=True):
        reference, hypothesis = reference.translate(_IGNORED), hypothesis.translate(_IGNORED)
        for name in source_names(source, dictionary):
            renderings = {r.text.translate(_IGNORED) for r in dictionary.renderings(name, False)}
            wanted = [rendering for rendering in renderings if rendering in reference]
            if wanted:
                names += 1
                rendered += any(rendering in hypothesis for rendering in wanted)
    return NameFidelity(names, rendered)
