"""The transformers export's length penalty: the exponent β of transformers' L^β that stands in
for this project's GNMT ((5 + L) / 6)^α."""

from __future__ import annotations

# The output length at which the exported length penalty grows at GNMT's rate: the everyday
# default's translations are short sentences of about this many tokens. Chosen on dev, where it
# gave the most pipeline outputs equal to the project's search (docs/benchmarks.md, transformers).
TYPICAL_OUTPUT_TOKENS = 7


def length_penalty_beta(alpha: float, typical_tokens: int = TYPICAL_OUTPUT_TOKENS) -> float:
    """transformers' exponent β whose L^β grows at the rate of GNMT's ((5 + L) / 6)^α at L =
    `typical_tokens`: d/dL of β log L equals that of α log(5 + L) there."""
    return alpha * typical_tokens / (typical_tokens + 5)
