#!/usr/bin/env bash
# A GPU lease in one command: the data stage (corpus copied and tokenized before any process
# starts CUDA or the compiler's threads), the GPU benchmark (its compiled mode first, the one
# training uses), then `experiment=kftt_gpu data=kyoto_wiki` trained to fit what is left of the
# budget, then the test set decoded with beam 5 on the GPU and scored (sacreBLEU ja-mecab, chrF).
# Run on the GPU machine, from a checkout that carries the folder `scripts/gpu_prepare.sh` filled
# on a CPU (default gpu/): nothing comes from the network.
#
#   scripts/gpu_run.sh [BUDGET]     # all of it, setup included: 570, 9m30s, 1h (default 9m30s)
#
# Everything lands in $OUT (default gpu_out/): gpu_run.log (this command's output), bench.md (the
# benchmark's table), train.log, hypotheses.txt and metrics.json (beam 5, test), timeline.txt,
# and, where it fits, compile_cache.bin (the run's compiled graphs: GPU_COMPILE_CACHE=that file
# make gpu-prepare carries it to the next lease). Each part runs under its own `timeout`, so a
# hang costs that part, not the lease.
# Environment: GPU_CARRY, GPU_DATA (kyoto_wiki), GPU_EXPERIMENT (kftt_gpu), GPU_BENCH_S (75),
# GPU_DECODE_S (90), GPU_RUN_ARGS (more training overrides), GPU_RUN_TESTS=1 (the CUDA tests
# first), PY (.venv's, else python3), GPU_RUN_WORK (where data caches and the run go; default
# /tmp/gpu_run). GPU_RUN_DRY=1: the same steps on a CPU with a tiny model and a few steps under
# the same time budget, which tests/test_gpu_command.py runs so this script cannot rot.
set -uo pipefail
START=$(date +%s)
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# Folders given relative are the caller's; the defaults are the checkout's.
CARRY=$(realpath -m "${GPU_CARRY:-$ROOT/gpu}")
OUT=$(realpath -m "${OUT:-$ROOT/gpu_out}")
WORK=$(realpath -m "${GPU_RUN_WORK:-/tmp/gpu_run}")
cd "$ROOT"
# The project's .venv where there is one (a machine set up with `make setup`), else the
# machine's own Python (a leased GPU's, with torch).
PY=${PY:-$([ -x .venv/bin/python ] && echo .venv/bin/python || echo python3)}
DATA=${GPU_DATA:-kyoto_wiki}
EXPERIMENT=${GPU_EXPERIMENT:-kftt_gpu}
DRY=${GPU_RUN_DRY:-0}
BENCH_S=${GPU_BENCH_S:-75}
DECODE_S=${GPU_DECODE_S:-90}
# Held back for installing, the timeline and copying results, and for the seconds a program
# takes to stop after its own budget ends.
MARGIN_S=20
# The largest file that comes back from a lease.
OUT_FILE_MAX_MIB=16
mkdir -p "$OUT" "$WORK"
exec > >(tee -a "$OUT/gpu_run.log") 2> >(tee -a "$OUT/gpu_run.log" >&2)
MARKS="$WORK/marks-$$.tsv"
: > "$MARKS"
mark() { echo -e "$1\t$(date +%s.%N)" >> "$MARKS"; echo "gpu_run: [$(( $(date +%s) - START )) s] $1"; }
fail() { echo "gpu_run: $*" >&2; exit 1; }

mark "start"
[ -d "$CARRY/corpora" ] \
    || fail "no $CARRY/corpora: run scripts/gpu_prepare.sh on a CPU first, and carry its folder"

if [ "$DRY" = 1 ]; then
    # A CPU, a tiny model and a few steps: every step of the lease, in seconds, not its scale.
    DEVICE=cpu
    BENCH=(--device cpu --models tiny --tokens 256 --modes eager --warmup 1 --iterations 2)
    TRAIN=(model=tiny training.device=cpu training.max_steps=4 training.warmup_steps=1
        training.eval_every=4 training.save_every=2 training.log_every=1
        training.dev_bleu_sentences=4 data.loading.batch_tokens=600 data.loading.num_workers=0
        tokenizer.vocab_size=320)
    DECODE=(--device cpu --limit 8)
else
    DEVICE=cuda
    # The mode training uses first, at the run's batch: its MFU is the one the run is held to.
    BENCH=(--modes compiled,eager --tokens 65536 --budget $(( BENCH_S - 15 )))
    TRAIN=()
    DECODE=()
fi
export TORCHINDUCTOR_CACHE_DIR="$WORK/inductor"
# The compiled graphs of an earlier lease, where one was carried: the run reads and rewrites it.
COMPILE_CACHE="$WORK/compile_cache.bin"
[ ! -f "$CARRY/compile_cache.bin" ] || cp "$CARRY/compile_cache.bin" "$COMPILE_CACHE"

# The packages the machine lacks, from the carried wheels; the project from this checkout.
if compgen -G "$CARRY/wheels/*.whl" > /dev/null; then
    timeout 120 "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
        --upgrade --target "$WORK/site" "$CARRY"/wheels/*.whl || fail "installing the wheels failed"
    export PYTHONPATH="$WORK/site:$PWD${PYTHONPATH:+:$PYTHONPATH}"
else
    export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
fi
# One process checks the packages and reads the budget: each start of Python costs seconds.
seconds=$("$PY" - "${1:-9m30s}" "${CARRY#"$PWD"/}" <<'EOF'
import sys

try:
    import datasets, hydra, ipadic, MeCab, sacrebleu  # noqa: E401, F401  what the run imports
except ModuleNotFoundError as missing:
    print(f"gpu_run: {missing.name} is missing: run scripts/gpu_prepare.sh on a CPU and carry "
          f"{sys.argv[2]}", file=sys.stderr)
    sys.exit(1)
from llm_from_scratch.errors import ConfigError
from llm_from_scratch.training.config import parse_duration

try:
    print(round(parse_duration(sys.argv[1], "BUDGET")))
except ConfigError as error:
    print(f"gpu_run: {error}", file=sys.stderr)
    sys.exit(2)
EOF
)
status=$?
(( status == 0 )) || exit "$status"
echo "gpu_run: a budget of $seconds s, all told"
export DATA_MIRROR="$CARRY/corpora" PYTHONUNBUFFERED=1
# matplotlib's font cache, which the run's first validation would otherwise build: meanwhile.
"$PY" -c "import matplotlib.font_manager" > /dev/null 2>&1 &
fonts=$!
mark "setup done"

# The data stage of the run's own config, in a process of its own: the copy of the corpus and
# its tokenizing (datasets.map forks its workers) come before any process starts CUDA or the
# compiler's threads; the run then reads the tokenized cache.
paths=("paths.root=$WORK" "paths.tokenizer_dir=$CARRY/tokenizers")
# shellcheck disable=SC2206  # GPU_RUN_ARGS: words, as make's ARGS
extra=(${GPU_RUN_ARGS:-})
run_config=("experiment=$EXPERIMENT" "data=$DATA" "${paths[@]}" "${TRAIN[@]}" "${extra[@]}")
timeout 600 "$PY" - "${run_config[@]}" <<'EOF' || fail "the data stage failed: see above"
import logging
import sys

from llm_from_scratch.programs.command import exit_on_user_error
from llm_from_scratch.programs.common import compose_config
from llm_from_scratch.programs.train import TrainConfig, prepare_data

logging.basicConfig(level=logging.INFO, format="gpu_run: %(message)s")
with exit_on_user_error():
    prepare_data(compose_config("train", sys.argv[1:], TrainConfig))
EOF
mark "data done"

if [ "${GPU_RUN_TESTS:-0}" = 1 ]; then  # the tests that skip without a GPU; off: they cost minutes
    timeout 180 "$PY" -m pytest -q -p no:cacheprovider tests/training/test_cuda.py \
        tests/model/test_cuda.py tests/decoding/test_cuda.py \
        || echo "gpu_run: the CUDA tests failed (rc $?): training anyway"
    mark "CUDA tests done"
fi

"$PY" -c "import torch; print(torch.__version__, torch.cuda.get_device_name() if torch.cuda.is_available() else 'no CUDA')"
[ "$DEVICE" = cpu ] || nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm --format=csv || true
timeout "$BENCH_S" "$PY" scripts/bench_gpu.py "${BENCH[@]}" > "$OUT/bench.md" \
    || echo "gpu_run: the benchmark failed or ran out of time (rc $?): training anyway"
cat "$OUT/bench.md"
mark "benchmark done"

# The run's budget: what is left, less the decoding and the margin. Its own clock starts when
# the program does, so its data and tokenizer stages count against it.
name="${EXPERIMENT}_lease_$(date -u +%Y%m%dT%H%M%S)"
wait "$fonts"
left=$(( seconds - ($(date +%s) - START) - DECODE_S - MARGIN_S ))
(( left >= 60 )) || fail "only $left s left to train: give a larger budget"
# The planner's path, in the dry run too; last.pt (with Adam's moments) every few minutes, not
# at each of the run's saves.
budget=("training.max_time=${left}s" training.last_every=2m "training.compile_cache=$COMPILE_CACHE")
mark "train start ($name, ${left} s)"
timeout -k 15 $(( left + MARGIN_S )) "$PY" scripts/train.py "name=$name" "${run_config[@]}" \
    "${budget[@]}"
train_rc=$?
mark "train end (rc $train_rc)"
run_dir="$WORK/runs/$name"
[ -f "$run_dir/train.log" ] && cp "$run_dir/train.log" "$OUT/train.log"

# Beam 5 (the run's length penalty) on the GPU; an explicit folder, whatever the default's name.
eval_dir="$WORK/eval-$name"
decode_rc=1
if [ "$train_rc" = 0 ] || compgen -G "$run_dir/*.pt" > /dev/null; then
    # The run's final model; a run stopped before its first validation has only last.pt.
    model=(--run "$name")
    if [ ! -f "$run_dir/averaged.pt" ] && [ ! -f "$run_dir/best.pt" ]; then
        model=(--checkpoint "$run_dir/last.pt")
    fi
    mark "decode start (${model[*]})"
    timeout -k 15 "$DECODE_S" "$PY" scripts/evaluate.py "${model[@]}" --split test --beam 5 \
        --output-dir "$eval_dir" "${DECODE[@]}" "${paths[@]}"
    decode_rc=$?
    mark "decode end (rc $decode_rc)"
    for file in hypotheses.txt metrics.json; do
        [ -f "$eval_dir/$file" ] && cp "$eval_dir/$file" "$OUT/$file"
    done
fi

if [ -f "$COMPILE_CACHE" ]; then  # the run's graphs, where the file fits what comes back
    if (( $(stat -c %s "$COMPILE_CACHE") < OUT_FILE_MAX_MIB * 1024 * 1024 )); then
        cp "$COMPILE_CACHE" "$OUT/"
    else
        echo "gpu_run: $COMPILE_CACHE is over ${OUT_FILE_MAX_MIB} MiB: not returned"
    fi
fi
mark "end"
"$PY" scripts/gpu_timeline.py "$MARKS" --log "$OUT/train.log" --events "$run_dir" \
    | tee "$OUT/timeline.txt"
rm -f "$MARKS"
if [ "$train_rc" != 0 ] || [ "$decode_rc" != 0 ]; then
    fail "training (rc $train_rc) or decoding (rc $decode_rc) failed: see $OUT/gpu_run.log"
fi
echo "gpu_run: done in $(( $(date +%s) - START )) s; results in $OUT"
