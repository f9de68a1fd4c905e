"""English→Japanese NMT from scratch, tokenizer to evaluation.

The public Python API:

    from llm_from_scratch import Translator
    translator = Translator.from_run("default")          # runs/default/averaged.pt, loaded once
    translator.translate(["Hello.", "How are you?"])[0].text

`Translator` is imported on first use, so `import llm_from_scratch` does not load torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from llm_from_scratch.decoding.translator import Translator

__version__ = "0.1.0"
__all__ = ["Translator", "__version__"]


def __getattr__(name: str) -> Any:
    if name == "Translator":
        from llm_from_scratch.decoding.translator import Translator

        return Translator
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
