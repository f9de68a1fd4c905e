"""How a run reads and writes text: its direction, the style its input is put in, the
placeholders it masks and the digits it writes numbers in, and what joins the translations of a
line's sentences."""

from __future__ import annotations

from dataclasses import dataclass

from llm_from_scratch.data.config import DataConfig

LANGUAGES_WITHOUT_SPACES = ("ja", "zh", "th")
# A language's full stop, and the comma that replaces it where a piece of a sentence ends.
STOP_AND_COMMA = {"ja": ("。", "、"), "en": (".", ",")}


def joiner_for(language: str) -> str:
    """What joins the translations of the sentences (and pieces) of a line in `language`."""
    return "" if language in LANGUAGES_WITHOUT_SPACES else " "


@dataclass(frozen=True)
class TextConventions:
    source_lang: str = "en"  # the run's data.direction
    target_lang: str = "ja"
    source_style: str = "raw"  # the style of the model's input (data.input_style)
    number_placeholders: bool = False  # the run's data.number_placeholders
    name_placeholders: bool = False  # the run's data.name_placeholders
    number_digits: str = "full_width"  # the run's data.number_digits

    @classmethod
    def of_data(cls, data: DataConfig) -> TextConventions:
        """The conventions of a run trained on `data`."""
        return cls(
            source_lang=data.source_lang,
            target_lang=data.target_lang,
            source_style=data.input_style,
            number_placeholders=data.number_placeholders,
            name_placeholders=data.name_placeholders,
            number_digits=data.number_digits,
        )

    @property
    def joiner(self) -> str:
        """Between the translations of a line's sentences and of a sentence's pieces."""
        return joiner_for(self.target_lang)

    @property
    def stop_and_comma(self) -> tuple[str, str]:
        """The target language's full stop and comma; empty where neither is known."""
        return STOP_AND_COMMA.get(self.target_lang, ("", ""))
