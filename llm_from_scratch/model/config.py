"""Schema of the `model` config group: its defaults are `make train`'s model, and each preset
(`configs/model/*.yaml`) holds only the keys it changes."""

from __future__ import annotations

from dataclasses import dataclass

from llm_from_scratch.errors import ConfigError, check_choice, check_range

ACTIVATIONS = ("relu", "gelu")


def check_width(d_model: int, n_heads: int, key: str = "model.d_model") -> None:
    """`d_model` (set by `key`) splits evenly into `n_heads` heads and sine-cosine pairs."""
    if d_model % n_heads:
        raise ConfigError(f"{key}={d_model} is not divisible by model.n_heads={n_heads}")
    if d_model % 2:
        # The sinusoidal encoding pairs each sine dimension with a cosine one.
        raise ConfigError(f"{key}={d_model} must be even")


@dataclass
class ModelConfig:
    """The CPU default (`model=small`), a Transformer of width 256; the measurements behind its
    choices are in docs/results.md (The everyday default)."""

    d_model: int = 256
    n_heads: int = 4
    n_encoder_layers: int = 3
    n_decoder_layers: int = 3
    d_ff: int = 1024
    # On embeddings and every sublayer output, the paper's P_drop. 0: a 30-minute run sees each
    # everyday pair too few times to overfit, and learned faster without it; recipes of many more
    # epochs set their own (`experiment=tanaka`).
    dropout: float = 0.0
    activation: str = "relu"
    norm_first: bool = True  # pre-LN; False reproduces the paper's post-LN
    tie_embeddings: bool = True  # decoder input/output; all three when the vocabulary is shared
    max_positions: int = 512  # longest source or target sequence the positional table covers

    def __post_init__(self) -> None:
        for key in (
            "d_model",
            "n_heads",
            "n_encoder_layers",
            "n_decoder_layers",
            "d_ff",
            "max_positions",
        ):
            check_range(f"model.{key}", getattr(self, key), 1)
        check_width(self.d_model, self.n_heads)
        check_range("model.dropout", self.dropout, 0, 1, high_open=True)
        check_choice("model.activation", self.activation, ACTIVATIONS)
