"""Cross-attention as a labelled figure: source pieces across, target pieces down, one panel per
decoder layer (heads averaged), drawn with matplotlib's Agg renderer for TensorBoard. The weights
come from `decoding/torch_engine.py`'s `teacher_forced_attention`, as the server's page's do."""

from __future__ import annotations

import functools
import logging
import unicodedata
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

import numpy as np
import torch

if TYPE_CHECKING:  # matplotlib is imported when a figure is drawn: it takes a second to load
    from matplotlib.figure import Figure

log = logging.getLogger(__name__)

# Fonts that hold Japanese glyphs, in order of preference: IPAexGothic ships with the
# matplotlib-fontja package (a dependency), the others are the system's (Debian:
# fonts-ipafont-gothic, fonts-noto-cjk). Without any, Japanese is drawn as boxes, and the run
# says so once.
JAPANESE_FONTS = ("IPAexGothic", "IPAGothic", "IPAPGothic", "Noto Sans CJK JP", "Noto Sans JP")
NO_JAPANESE_FONT = (
    "no Japanese font for the attention figures: their Japanese labels are drawn as boxes; "
    "install the project's dependency matplotlib-fontja (pip install matplotlib-fontja) or a "
    "system font (Debian: apt-get install fonts-ipaexfont-gothic)"
)
_FONT_FILES = ("ipaexg", "ipag", "ipagp", "notosanscjk", "notosansjp")
LABEL_POINTS = 10
DPI = 120  # kanji of 10 points are a blur at 100 dpi
CELL_INCHES = 0.3  # one token's row or column: room for a label
TICK_GAP_INCHES = 0.3  # between a tick label and the panel
TITLES_INCHES = 0.9  # the figure's and the panels' titles
MIN_WIDTH_INCHES = 5.5  # room for the figure's title


def piece_label(piece: str) -> str:
    """A piece as a tick label: a leading space (a word start) shown as ▁, as SentencePiece
    does, since an invisible space would merge the piece with its neighbour."""
    return piece.replace(" ", "▁") or "∅"


def attention_figure(
    weights: torch.Tensor,
    src_pieces: Sequence[str],
    tgt_pieces: Sequence[str],
    title: str,
) -> Figure:
    """`weights` (layers, tgt_len, src_len): one panel per layer, source pieces on the x axis
    and target pieces on the y axis."""
    from matplotlib.figure import Figure

    layers, rows, cols = weights.shape
    if (rows, cols) != (len(tgt_pieces), len(src_pieces)):
        raise ValueError(
            f"attention of shape {(rows, cols)} does not match {len(tgt_pieces)} target and "
            f"{len(src_pieces)} source pieces"
        )
    x_labels = [piece_label(piece) for piece in src_pieces]
    y_labels = [piece_label(piece) for piece in tgt_pieces]
    panel_width = cols * CELL_INCHES + _label_inches(y_labels) + TICK_GAP_INCHES
    width = max(layers * panel_width, MIN_WIDTH_INCHES)
    height = rows * CELL_INCHES + _label_inches(x_labels) + TICK_GAP_INCHES + TITLES_INCHES
    with _fonts():
        figure = Figure(figsize=(width, height), dpi=DPI, layout="constrained")
        axes = figure.subplots(1, layers, squeeze=False)[0]
        for layer, ax in enumerate(axes):
            ax.imshow(weights[layer].float().cpu().numpy(), cmap="viridis", vmin=0.0)
            ax.set_xticks(range(cols), x_labels, rotation=90, fontsize=LABEL_POINTS)
            ax.set_yticks(range(rows), y_labels, fontsize=LABEL_POINTS)
            ax.tick_params(length=0)
            ax.set_title(f"decoder layer {layer + 1}", fontsize=LABEL_POINTS)
        figure.suptitle(title, fontsize=LABEL_POINTS + 1)
    return figure


def _label_inches(labels: Sequence[str]) -> float:
    """About how long the longest label is: wide (CJK) characters take an em, others less."""
    ems = max((sum(1.0 if _wide(char) else 0.62 for char in label) for label in labels), default=0)
    return ems * LABEL_POINTS / 72


def _wide(char: str) -> bool:
    return unicodedata.east_asian_width(char) in ("W", "F")


def render(figure: Figure) -> np.ndarray:
    """The figure as an (height, width, 3) uint8 image."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(figure)
    with _fonts():
        canvas.draw()
    return np.asarray(canvas.buffer_rgba())[..., :3].copy()


@contextmanager
def _fonts() -> Iterator[None]:
    """Draw with a fallback, glyph by glyph, to a Japanese font when one is installed; stay
    quiet about glyphs no font has."""
    from matplotlib import rc_context

    families = ["DejaVu Sans", *_japanese_fonts()]
    with rc_context({"font.family": families}), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Glyph .* missing from")
        yield


@functools.cache
def _japanese_fonts() -> tuple[str, ...]:
    """The installed fonts of `JAPANESE_FONTS`, matplotlib-fontja's first; a warning, once, where
    there is none. matplotlib's font list is cached on disk when it is first built, so fonts
    installed later are looked for among the system's font files."""
    from matplotlib import font_manager, rc_context

    def known() -> set[str]:
        return {entry.name for entry in font_manager.fontManager.ttflist}

    try:
        with rc_context():  # importing it makes its font every figure's: only ours use it
            import matplotlib_fontja  # noqa: F401  (adds its font to matplotlib's list)
    except ImportError:
        pass
    if not known().intersection(JAPANESE_FONTS):
        for path in font_manager.findSystemFonts():
            name = path.rsplit("/", 1)[-1].lower().replace("-", "")
            if name.startswith(_FONT_FILES):
                font_manager.fontManager.addfont(path)
    installed = known()
    found = tuple(name for name in JAPANESE_FONTS if name in installed)
    if not found:
        log.warning(NO_JAPANESE_FONT)
    return found
