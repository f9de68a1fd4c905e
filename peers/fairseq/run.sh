#!/usr/bin/env bash
# fairseq 0.12 beside `make train` (data=everyday_mix, model=small): the same train, dev and test
# pairs and the same token ids, prepared by this project's own code (pieces.py), a Transformer of
# model=small's shape, the same CPU for the same wall time. The clock covers what ours covers:
# fetching the corpora, training the tokenizers (or loading them), tokenizing and cleaning, and
# fairseq's binarizing and training. fairseq stops itself at the limit (--stop-time-hours) and
# saves checkpoint_last.pt; those weights translate test with beam 5, scored as `make eval`
# scores ours (BLEU ja-mecab, chrF, character BLEU), and fairseq's own tokens/s is printed.
#
#   peers/fairseq/run.sh FAIRSEQ_PYTHON WORK_DIR [LIMIT_SECONDS]
#
# FAIRSEQ_PYTHON: a Python with fairseq-fixed and sacrebleu[ja] (its own venv, see README.md).
# DATA_MIRROR must hold small_parallel_enja/ and tanaka_graded/. PROJECT_PYTHON (default:
# .venv/bin/python, `make setup`'s): the project's. TOKENIZER_DIR: a folder of tokenizers a run
# of ours trained (its data/tokenizers/), loaded instead of trained. TEST_LINES: translate only
# the first that many test sentences (a dry run). PROJECT_ARGS: more Hydra overrides for the data.
set -euo pipefail
usage="usage: run.sh FAIRSEQ_PYTHON WORK_DIR [LIMIT_SECONDS]"
python=${1:?$usage}
work=$(mkdir -p "${2:?$usage}" && cd "$2" && pwd)
limit=${3:-1800}
: "${DATA_MIRROR:?set DATA_MIRROR to the directory that holds small_parallel_enja/ and tanaka_graded/}"
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
project_python=${PROJECT_PYTHON:-$root/.venv/bin/python}
bin=$(dirname "$python")
start=$(date +%s)
elapsed() { echo $(($(date +%s) - start)); }

if [ -n "${TOKENIZER_DIR:-}" ]; then
  mkdir -p "$work/project/tokenizer_dir"
  cp "$TOKENIZER_DIR"/*.json "$work/project/tokenizer_dir/"
fi
# shellcheck disable=SC2086  # PROJECT_ARGS: several overrides
"$project_python" "$here/pieces.py" export ${TEST_LINES:+--test-lines "$TEST_LINES"} "$work" \
  ${PROJECT_ARGS:-} > "$work/export.log" 2>&1 || { tail -5 "$work/export.log" >&2; exit 1; }
tail -1 "$work/export.log"
text=$work/text
"$bin/fairseq-preprocess" --source-lang en --target-lang ja --trainpref "$text/train" \
  --validpref "$text/dev" --srcdict "$text/dict.en" --tgtdict "$text/dict.ja" \
  --destdir "$work/bin" --workers 1 > "$work/preprocess.log" 2>&1
echo "data ready in $(elapsed) s"

# model=small: pre-LN, d_model 256, 4 heads, 3 + 3 layers, feed-forward 1024, ReLU, dropout 0,
# decoder input and output embeddings tied. Ours' training defaults: Adam(W) 0.9/0.98 with
# weight decay 0.01, peak learning rate 2e-3 after 600 warm-up updates, label smoothing 0.1,
# gradient norm clipped at 1. Ours' 4,096-token batches count padded source plus target; fairseq's
# --max-tokens bounds each side, hence 2,048.
left=$((limit - $(elapsed)))
[ "$left" -gt 0 ] || { echo "the limit passed before training began" >&2; exit 1; }
"$bin/fairseq-train" "$work/bin" --source-lang en --target-lang ja --cpu --num-workers 0 \
  --seed 1234 --arch transformer --encoder-layers 3 --decoder-layers 3 \
  --encoder-embed-dim 256 --decoder-embed-dim 256 --encoder-ffn-embed-dim 1024 \
  --decoder-ffn-embed-dim 1024 --encoder-attention-heads 4 --decoder-attention-heads 4 \
  --encoder-normalize-before --decoder-normalize-before --share-decoder-input-output-embed \
  --activation-fn relu --dropout 0 --attention-dropout 0 --activation-dropout 0 \
  --max-source-positions 512 --max-target-positions 512 \
  --optimizer adam --adam-betas '(0.9, 0.98)' --weight-decay 0.01 --clip-norm 1.0 \
  --lr 2e-3 --lr-scheduler inverse_sqrt --warmup-updates 600 --warmup-init-lr 1e-7 \
  --criterion label_smoothed_cross_entropy --label-smoothing 0.1 --max-tokens 2048 \
  --stop-time-hours "$(awk -v s="$left" 'BEGIN { printf "%.6f", s / 3600 }')" \
  --save-dir "$work/checkpoints" --no-epoch-checkpoints --log-format simple --log-interval 50 \
  > "$work/train.log" 2>&1 || { tail -20 "$work/train.log" >&2; exit 1; }
trained=$(($(stat -c %Y "$work/checkpoints/checkpoint_last.pt") - start))
echo "trained for ${trained} s to the last checkpoint (limit ${limit} s); log: $work/train.log"
# fairseq's wps: target tokens (each sentence's end included) a second, its "words". The median
# of its logs of 50 updates, and each epoch's average (the last one cut short by the limit).
{ grep -E '\| train_inner \|' "$work/train.log" || true; } | grep -oE 'wps=[0-9.]+' | cut -d= -f2 |
  sort -n | awk '{ v[NR] = $1 } END { if (NR) printf "  wps, median of %d logs of 50 updates: %s\n", NR, v[int((NR + 1) / 2)] }' || true
{ grep -E '\| train \| epoch' "$work/train.log" || true; } |
  sed -E 's/.*epoch ([0-9]+) .*\| wps ([0-9.]+) .*\| num_updates ([0-9]+) .*/  epoch \1: wps \2, \3 updates in all/' || true
# Ours' tokens/s count source and target tokens: the train split's ratio converts.
grep -E '/train\.(en|ja): [0-9]+ sents' "$work/preprocess.log" | sed -E 's/.*train\.(en|ja): ([0-9]+) sents, ([0-9]+) tokens.*/\1 \3/' |
  awk '{ n[$1] = $2 } END { printf "  source + target tokens = %.3f x wps (the train split'"'"'s)\n", (n["en"] + n["ja"]) / n["ja"] }' || true

began=$(date +%s)
TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1 "$bin/fairseq-interactive" "$work/bin" --cpu \
  --source-lang en --target-lang ja --path "$work/checkpoints/checkpoint_last.pt" \
  --beam 5 --max-len-a 1.5 --max-len-b 10 --buffer-size 256 --batch-size 64 \
  --input "$text/test.en" > "$work/test.fairseq" 2> "$work/test.log" ||
  { tail -20 "$work/test.log" >&2; exit 1; }
"$project_python" "$here/pieces.py" restore "$work" "$work/test.fairseq" > "$work/test.hyp.ja"
echo "beam 5: translated $(wc -l < "$text/test.ref.ja") test sentences in $(($(date +%s) - began)) s"
score() {  # label, hypotheses, references
  sacrebleu() { "$python" -m sacrebleu "$3" -i "$2" -b -w 2 "${@:4}"; }
  echo "  $1: BLEU $(sacrebleu "$@" -tok ja-mecab -m bleu) (ja-mecab), chrF $(sacrebleu "$@" -m chrf)," \
    "BLEU $(sacrebleu "$@" -tok char -m bleu) (char), $(wc -l < "$2") sentences"
}
score all "$work/test.hyp.ja" "$text/test.ref.ja"
for corpus in $(sort -u "$text/test.corpus"); do
  paste "$text/test.corpus" "$work/test.hyp.ja" | awk -F'\t' -v c="$corpus" '$1 == c' |
    cut -f2- > "$work/test.hyp.$corpus"
  paste "$text/test.corpus" "$text/test.ref.ja" | awk -F'\t' -v c="$corpus" '$1 == c' |
    cut -f2- > "$work/test.ref.$corpus"
  score "$corpus" "$work/test.hyp.$corpus" "$work/test.ref.$corpus"
done
