"""Schema of the `decoding` config group: its defaults are `make train`'s beam search, and each
preset (`configs/decoding/*.yaml`) holds only the keys it changes."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from llm_from_scratch.errors import ConfigError, check_choice, check_range
from llm_from_scratch.numbers import DIGIT_FORMS
from llm_from_scratch.precision import PRECISIONS

# Set by a recipe for its corpus (configs/train.yaml, experiments), not by a preset: a program
# that names a preset (`evaluate.py decoding=greedy`) keeps the run's.
RECIPE_KEYS = ("clause_split_tokens",)


@dataclass
class DecodingConfig:
    """The measurements behind these defaults are in docs/results.md (Decoding settings)."""

    beam_size: int = 5  # 1 is greedy search
    nbest: int = 1  # hypotheses returned per sentence, best first
    # GNMT alpha; 0 disables. Lower leaves outputs shorter than the references; much higher sends
    # some beams into loops that run to the length limit.
    length_penalty: float = 1.5
    max_len_a: float = 1.5  # output length limit: a * source_length + b (source EOS counted)
    max_len_b: int = 10
    # Ban a token that would repeat an n-gram of the output's tokens (fairseq's and Hugging Face's
    # no_repeat_ngram_size): it stops loops (東京東京東京…) without costing dev BLEU. 0 disables.
    no_repeat_ngram_size: int = 3
    # The ban spares numbers (digits are tokens of their own): zeros within one (10000), digits an
    # earlier one shares (1998 after 1995), up to a run of 16 tokens (decoding/common.py); a longer
    # run is a loop. false: it bans their repeats too, as CTranslate2's ban does; `avoid_loops`'s
    # last search turns it off, since a run of zeros is a loop there.
    no_repeat_spares_numbers: bool = True
    # Beam search: return a hypothesis that ended with EOS before any the length limit cut off,
    # whatever their scores (off: they compete on score alone, as in fairseq and JoeyNMT).
    prefer_finished: bool = False
    # Set a translation's numbers back to its source's where the model changed them
    # (number_repair.py); the text changes, not the tokens. Translator and validation.
    repair_numbers: bool = True
    # Beam search: return first the best of a source's `beam_size` hypotheses that keeps all its
    # numbers (after the repair; placeholders too, preferring one that repeats none), where one
    # does; the rest follow in score order. No cost in dev BLEU. Translator only.
    numbers_first: bool = True
    # Beam search: where a source's best hypothesis loops and the source does not (a unit of 1 to
    # 4 words 3 times in a row, or a word 4-gram 3 times: evaluation's loops), search all
    # `beam_size` hypotheses and return first the best that does not loop; where all loop, search
    # once more banning repeated token pairs, then, where those all loop too, repeated tokens. A
    # clause-split sentence whose clauses loop joined is searched again in one piece. No cost in
    # dev BLEU. Translator only.
    avoid_loops: bool = True
    # Where a piece's best hypothesis runs to the length limit (max_len_a, max_len_b: the model
    # never ended it), search its halves instead (cut at clauses, else between words), halving
    # again up to 3 times where they run away too. A piece that ends is untouched. Translator
    # only.
    split_runaways: bool = True
    # Translate a sentence of more source tokens than this clause by clause: cut after its commas,
    # semicolons and colons, the clauses packed into pieces of at most this many tokens. A model
    # trained on short sentences loses the thread of longer ones. 0: a sentence is cut only where
    # it exceeds the model's positional table. Translator only (validation decodes whole). One of
    # the RECIPE_KEYS: `make train` sets 16 (configs/train.yaml).
    clause_split_tokens: int = 0
    # Write a rare name the run masks (data.name_placeholders) back into Japanese as the name
    # dictionary renders a foreign name (name_dictionary.py: Biden as バイデン), where it is
    # installed (apt-get install enamdict edict); false, or without it: copied as the source
    # writes it. Translator only.
    render_names: bool = True
    # The corpus whose Japanese text decides how a masked name is written where the dictionary
    # gives several spellings (タリバン, not ターリバーン) or kanji too (安倍 keeps `Abe` copied):
    # its folder under paths.raw_dir once fetched, else the data mirror's ($DATA_MIRROR); null,
    # or neither there: the dictionary's support decides (name_dictionary.py).
    name_usage: str | None = "wikinews_ja"
    # The run of a transliteration model (experiment=transliteration) that writes a masked name
    # the dictionary does not know in katakana (Kudlow: クドロー), where it is one word of letters
    # and the model's output is katakana; null: such a name is copied. Translator only.
    transliteration: str | None = None
    # How a copied number is written back in Japanese (`full_width`, `ascii`); null: as the
    # run's corpus writes numbers (`data.number_digits`). Translator only.
    number_digits: str | None = None
    batch_tokens: int = 8000  # bound on padded source tokens x beam_size per decoding batch
    # Of `Translator` (translate, evaluate); validation decodes at training.precision. auto: bf16
    # autocast where training's `auto` would pick it (a GPU, a CPU whose bf16 matrix products are
    # native and faster), else fp32. bf16 is faster but changes a few outputs; fp32 is exact.
    precision: str = "auto"

    def __post_init__(self) -> None:
        check_range("decoding.beam_size", self.beam_size, 1)
        if not 1 <= self.nbest <= self.beam_size:
            raise ConfigError(
                f"decoding.nbest={self.nbest} must be between 1 and "
                f"decoding.beam_size={self.beam_size}"
            )
        check_range("decoding.length_penalty", self.length_penalty, 0)
        check_range("decoding.max_len_a", self.max_len_a, 0)
        check_range("decoding.max_len_b", self.max_len_b, 1)
        check_range("decoding.no_repeat_ngram_size", self.no_repeat_ngram_size, 0)
        check_range("decoding.clause_split_tokens", self.clause_split_tokens, 0)
        check_choice("decoding.precision", self.precision, PRECISIONS)
        check_range("decoding.batch_tokens", self.batch_tokens, 1)
        if self.number_digits is not None:
            check_choice("decoding.number_digits", self.number_digits, DIGIT_FORMS)


def preset_settings(preset: dict[str, Any]) -> dict[str, Any]:
    """The settings a preset (the keys its configs/decoding/*.yaml changes) stands for over a
    run's own: every key but the RECIPE_KEYS, the schema's default where the preset sets none."""
    defaults = DecodingConfig()
    keys = [field.name for field in fields(DecodingConfig) if field.name not in RECIPE_KEYS]
    return {key: getattr(defaults, key) for key in keys} | preset
