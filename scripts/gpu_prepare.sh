#!/usr/bin/env bash
# Prepare, on a CPU with network, everything a GPU lease's `scripts/gpu_run.sh` reads, into one
# folder that git ignores and that travels with the working tree (`carry` it: default gpu/):
#   gpu/wheels/     the Python packages the GPU machine lacks (cp312, manylinux x86_64), MeCab's
#                   and its dictionary's too, so that test BLEU is scored with ja-mecab there
#   gpu/corpora/    the corpus, laid out as a DATA_MIRROR (<mirror>/<dataset>/<file>)
#   gpu/tokenizers/ the run's tokenizers, trained here by the project's own tokenizer program
#                   with the run's data and tokenizer settings, so the lease does not train them
#   gpu/compile_cache.bin  an earlier lease's compiled graphs (its $OUT/compile_cache.bin, named
#                   by GPU_COMPILE_CACHE), which the run loads before it compiles
# The tokenized cache is not carried: it is several times the corpus and the travel limit.
# Then it prints the folder's size and fails where folder and working tree exceed what travels.
#
#   scripts/gpu_prepare.sh            # or: make gpu-prepare
# Environment: GPU_CARRY (the folder), GPU_DATA (the corpus, default kyoto_wiki, from
# $DATA_MIRROR), GPU_EXPERIMENT (default kftt_gpu), GPU_PREPARE_ROOT (`paths.root` of the copy
# it reads the corpus from, default the project's data/), GPU_COMPILE_CACHE (a lease's
# compile_cache.bin to carry), PY (default .venv/bin/python).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
CARRY=$(realpath -m "${GPU_CARRY:-gpu}")
DATA=${GPU_DATA:-kyoto_wiki}
EXPERIMENT=${GPU_EXPERIMENT:-kftt_gpu}
# The device machine's Python; a pure-Python package matches any.
PLATFORM=(--python-version 3.12 --implementation cp --platform manylinux_2_28_x86_64
    --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64
    --platform manylinux2014_x86_64 --platform manylinux1_x86_64)
# What the device lacks (/work/.library/device/KINDS.md's list): Hydra and its parser, 🤗 datasets
# with the two it needs beyond what is there, MeCab and its dictionary for sacreBLEU's ja-mecab.
# Pinned to the versions this project's .venv runs, so both machines run the same code.
WHEELS=(hydra-core omegaconf datasets dill multiprocess mecab-python3)
SDIST_ONLY=(antlr4-python3-runtime ipadic)  # no wheel on PyPI: built here (pure Python, data)
LIMIT_MIB=64  # what travels: working tree and carried folders together
FOLDER_LIMIT_MIB=60

fail() { echo "gpu_prepare: $*" >&2; exit 1; }
[ -x "$PY" ] || fail "$PY not found: run \`make setup\` first"
[ -n "${DATA_MIRROR:-}" ] || fail "set DATA_MIRROR to the directory that holds $DATA/"
case "$(realpath -m "$CARRY")/" in  # inside the checkout, git must ignore it
    "$PWD"/*) git check-ignore -q "$CARRY/" || fail "$CARRY/ is not ignored by git: add it to .gitignore" ;;
esac

pinned() {  # NAME==VERSION as installed in .venv
    local version
    version=$("$PY" -m pip show "$1" 2>/dev/null | sed -n 's/^Version: //p')
    [ -n "$version" ] || fail "$1 is not installed in $PY's environment"
    echo "$1==$version"
}

mkdir -p "$CARRY/wheels" "$CARRY/corpora" "$CARRY/tokenizers"
echo "gpu_prepare: wheels into $CARRY/wheels/"
specs=()
for name in "${WHEELS[@]}"; do specs+=("$(pinned "$name")"); done
"$PY" -m pip download --quiet --no-deps --only-binary=:all: "${PLATFORM[@]}" \
    -d "$CARRY/wheels" "${specs[@]}"
specs=()
for name in "${SDIST_ONLY[@]}"; do specs+=("$(pinned "$name")"); done
"$PY" -m pip wheel --quiet --no-deps -w "$CARRY/wheels" "${specs[@]}"

echo "gpu_prepare: the corpus and the tokenizers of experiment=$EXPERIMENT data=$DATA"
# The corpus files its config reads (each member's, for a mixture), laid out as a DATA_MIRROR,
# then the project's own tokenizer training with the settings of the run's composed config, so
# that the run finds them under the same names (which digest those settings) and trains none.
started=$(date +%s)
"$PY" - "$DATA_MIRROR" "$CARRY/corpora" "experiment=$EXPERIMENT" "data=$DATA" \
    "paths.tokenizer_dir=$CARRY/tokenizers" ${GPU_PREPARE_ROOT:+"paths.root=$GPU_PREPARE_ROOT"} <<'EOF'
import logging
import os
import shutil
import sys
from pathlib import Path

from llm_from_scratch.data.sources import fetch_data
from llm_from_scratch.programs.common import compose_config
from llm_from_scratch.programs.train import TrainConfig  # registers the train config's schema
from llm_from_scratch.training.tokenizers import load_or_train_tokenizers, tokenizer_paths

logging.basicConfig(level=logging.INFO, format="gpu_prepare: %(message)s")
mirror, carried, overrides = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3:]
config = compose_config("train", overrides, TrainConfig)
for member in config.data.members:
    source, target = mirror / member.name, carried / member.name
    if not source.is_dir():
        sys.exit(f"gpu_prepare: {source} not found")
    target.mkdir(parents=True, exist_ok=True)
    names = [file.name for file in member.files] or [
        path.name for path in source.iterdir() if path.is_file() and path.suffix != ".md"
    ]
    for name in names:
        if not (target / name).is_file() or (target / name).stat().st_size != (
            source / name
        ).stat().st_size:
            shutil.copyfile(source / name, target / name)
os.environ["DATA_MIRROR"] = str(carried)  # the run's mirror: the data stage verifies its files
fetch_data(config.data, config.paths)
load_or_train_tokenizers(config.data, config.tokenizer, config.paths)
for path in dict.fromkeys(tokenizer_paths(config.data, config.tokenizer, config.paths)):
    print(f"gpu_prepare: {path}")
EOF
echo "gpu_prepare: corpus and tokenizers ready in $(( $(date +%s) - started )) s"
if [ -n "${GPU_COMPILE_CACHE:-}" ]; then
    [ -f "$GPU_COMPILE_CACHE" ] || fail "GPU_COMPILE_CACHE=$GPU_COMPILE_CACHE: no such file"
    cp "$GPU_COMPILE_CACHE" "$CARRY/compile_cache.bin"
    echo "gpu_prepare: $CARRY/compile_cache.bin from $GPU_COMPILE_CACHE"
fi

folder_kib=$(du -sk "$CARRY" | cut -f1)
# What travels beside it: tracked and untracked files git does not ignore (a deleted one is none).
tree_kib=$( { git ls-files -z --cached --others --exclude-standard \
    | du -ck --files0-from=- 2>/dev/null || true; } | tail -1 | cut -f1)
echo "gpu_prepare: $CARRY/ holds $(( folder_kib / 1024 )) MiB; with the working tree" \
    "$(( (folder_kib + tree_kib) / 1024 )) MiB of the ${LIMIT_MIB} MiB that travel"
if (( folder_kib > FOLDER_LIMIT_MIB * 1024 || folder_kib + tree_kib > LIMIT_MIB * 1024 )); then
    fail "too large to travel: carry less (GPU_DATA, or drop wheels/ipadic-*.whl and score on the CPU)"
fi
echo "gpu_prepare: ready. On the GPU machine (carry $CARRY): scripts/gpu_run.sh [BUDGET]"
