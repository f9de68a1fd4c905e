#!/usr/bin/env bash
# JoeyNMT 2.3 on kyoto_wiki for a fixed wall time, beside `experiment=kyoto_wiki` (same data, same
# Transformer shape, same CPU). The clock covers what ours covers: sentencepiece training,
# JoeyNMT's data loading and training. At the limit training gets SIGINT and JoeyNMT saves its
# weights; then those weights translate test with each search in SEARCHES (default "1 5": greedy,
# then beam 5), each scored as ours are (BLEU ja-mecab, chrF, character BLEU) and timed.
#
#   peers/joeynmt/run.sh JOEYNMT_PYTHON WORK_DIR [LIMIT_SECONDS]
#
# JOEYNMT_PYTHON: a Python with joeynmt==2.3.0 sentencepiece==0.1.99 sacrebleu[ja] (its own venv,
# see README.md). DATA_MIRROR must hold kyoto_wiki/. SPM_VOCAB (default 8000): the vocabulary size
# a side, smaller only for a smoke test on a small corpus.
set -euo pipefail
python=${1:?usage: run.sh JOEYNMT_PYTHON WORK_DIR [LIMIT_SECONDS]}
work=$(mkdir -p "${2:?usage: run.sh JOEYNMT_PYTHON WORK_DIR [LIMIT_SECONDS]}" && cd "$2" && pwd)
limit=${3:-7200}
corpus=${DATA_MIRROR:?set DATA_MIRROR to the directory that holds kyoto_wiki/}/kyoto_wiki
here=$(cd "$(dirname "$0")" && pwd)
start=$(date +%s)

mkdir -p "$work/data"
for lang in en ja; do
  gzip -dc "$corpus/train.$lang.gz" > "$work/data/train.$lang"
  cp "$corpus/dev.$lang" "$corpus/test.$lang" "$work/data/"
done
# 8k BPE a side with byte fallback and ours' character coverage; JoeyNMT's special ids.
for lang in en ja; do
  "$python" - "$work/data" "$lang" "${SPM_VOCAB:-8000}" <<'PY'
import sys
import sentencepiece as spm
data, lang, vocab_size = sys.argv[1:]
spm.SentencePieceTrainer.train(
    input=f"{data}/train.{lang}", model_prefix=f"{data}/spm.{lang}", model_type="bpe",
    vocab_size=int(vocab_size), character_coverage=0.9995, byte_fallback=True, num_threads=2,
    input_sentence_size=2000000, shuffle_input_sentence=True,
    unk_id=0, pad_id=1, bos_id=2, eos_id=3, minloglevel=2,
)
with open(f"{data}/spm.{lang}.vocab", encoding="utf-8") as vocab, \
        open(f"{data}/vocab.{lang}", "w", encoding="utf-8") as out:
    out.writelines(line.split("\t")[0] + "\n" for line in vocab)
PY
done
sed "s|@WORK@|$work|g" "$here/kyoto_wiki.yaml" > "$work/config.yaml"

# A background job of a script starts with SIGINT ignored, and Python then keeps ignoring it:
# JoeyNMT's own handler of KeyboardInterrupt (save the weights) needs it back. --skip-test: its
# own test after training would translate dev and test with beam 5 from best.ckpt (the best
# validation, possibly long before the limit), each for longer than this script's searches.
"$python" -c 'import runpy, signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
sys.argv = ["joeynmt", "train", sys.argv[1], "--skip-test"]
runpy.run_module("joeynmt", run_name="__main__")' "$work/config.yaml" > "$work/train.log" 2>&1 &
joey=$!
left=$((limit - ($(date +%s) - start)))
# Wake every few seconds: JoeyNMT may end on its own first.
while [ "$left" -gt 0 ] && kill -0 "$joey" 2>/dev/null; do
  sleep $((left < 10 ? left : 10))
  left=$((limit - ($(date +%s) - start)))
done
kill -INT "$joey" 2>/dev/null || true
trained=$(($(date +%s) - start))
wait "$joey" || echo "JoeyNMT exited with status $?" >&2
echo "trained for ${trained} s (limit ${limit} s); log: $work/train.log"
[ -e "$work/model/latest.ckpt" ] || { echo "no weights saved: see $work/train.log" >&2; exit 1; }

# Test only, from the weights at the limit: the dev line goes, the checkpoint and search come in.
for beam in ${SEARCHES:-1 5}; do
  sed -e "/^  dev: /d" -e "s|^testing:|testing:\n  load_model: \"$work/model/latest.ckpt\"|" \
    -e "s|^  beam_size: .*|  beam_size: $beam|" "$work/config.yaml" > "$work/config.beam$beam.yaml"
  began=$(date +%s)
  "$python" -m joeynmt test "$work/config.beam$beam.yaml" -o "$work/model/beam$beam.hyps" \
    > "$work/test.beam$beam.log" 2>&1
  echo "beam $beam: translated test in $(($(date +%s) - began)) s"
  for tokenize in ja-mecab char; do
    echo "  $tokenize: $("$python" -m sacrebleu "$work/data/test.ja" -i "$work/model/beam$beam.hyps.test" \
      -tok "$tokenize" -m bleu chrf -b -w 2 | tr '\n' ' ')"
  done
done
