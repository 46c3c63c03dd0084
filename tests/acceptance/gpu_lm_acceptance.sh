#!/usr/bin/env bash
# Issue 15's acceptance run on a CUDA machine (no Qt needed there): word-lm-medium on the
# built-in synthetic-text (1M training tokens) for 5 epochs in fp32 / mixed_fp16 /
# mixed_bf16 in lockstep, with the example's settings (batch 20, bptt 35, SGD lr 20,
# clipping 0.25, plateau schedule). Passes when the three test perplexities are within 2%
# of each other and within 15% of the source's floor (2 to the power of its entropy rate,
# which `mixlab-cli corpus synthetic-text --json` prints; the same 4.703 at every
# vocabulary). The vocabulary is 1,000 words by default: a million tokens are too few to
# learn the 10,000-word source (8 successors per word, 7 classes of the word before): on
# 2026-12-02 the three policies ended 5 epochs there at 6.52-6.58, 39% above the floor
# and still falling. Of a 1,000-word source, 897 words occur in the million training
# tokens (the rest only on the source's rare cycle slot): synthetic-text's vocabulary is
# the source's 1,000, a corpus folder's is what train.txt holds.
# Results on the H200 (2026-12-03, features stored padded to 656; the same numbers as on
# 2026-12-02: the run is deterministic): 5.411 / 5.384 / 5.380, 0.57% apart, 15.05% above
# the floor: FAIL by 0.05 points, on fp32 alone. PyTorch's word_language_model recipe on
# the same text in the same call (bench/lm_reference.py on `corpus --write`'s folder, the
# bare stream): 5.363 / 5.345 / 5.370 (fp32 / amp_fp16 / amp_bf16), 13.6-14.2%. The data
# is not what stops them: a trigram count model of train reaches 4.801 (2.1%), and the
# recipe's model trained on (PyTorch, 15 epochs) reaches 5.134 (9.2%), its excess spread
# over every successor rank (not the rare cycle slot). PyTorch's 5-epoch results stayed at
# 13.1-14.7% with dropout 0, 0.2 or 0.5, a flatter or a 3-class source, or another seed
# (2026-12-03); at 500 words it ended 11.3%. The 15% limit sits at the recipe's 5-epoch
# result, so seed noise of about 0.5% decides it.
# Usage: tests/acceptance/gpu_lm_acceptance.sh MIXLAB_CLI OUT_DIR [EPOCHS [VOCAB]]
set -uo pipefail
cli="$1"; out="$2"; epochs="${3:-5}"; vocab="${4:-1000}"
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$out"
"$cli" corpus synthetic-text --vocab "$vocab" --json > "$out/corpus.json" || exit 1
"$cli" compare --model "$here/../../resources/models/word-lm-medium.json" \
  --dataset synthetic-text --vocab "$vocab" --epochs "$epochs" --device cuda \
  --policies fp32,mixed_fp16,mixed_bf16 --sample-words 40 --log-json "$out/lm.json" \
  > "$out/lm.txt" 2> "$out/lm.err"
rc=$?
tail -n 20 "$out/lm.err"
cat "$out/lm.txt"
[ $rc -eq 0 ] || { echo "FAIL: compare exited $rc"; exit 1; }
python3 - "$out/corpus.json" "$out/lm.json" <<'PY'
import json, math, sys
corpus = json.load(open(sys.argv[1]))
bits = corpus.get("entropy_bits") or corpus.get("entropy_bits_per_token")
floor = 2.0 ** bits
trigram = (corpus.get("trigram_perplexity") or {}).get("test")
log = json.load(open(sys.argv[2]))
ppl = {r["policy"]: r["summary"]["final_test_perplexity"] for r in log["runs"]}
print("floor perplexity %.3f; test perplexities %s" %
      (floor, ", ".join("%s %.3f" % kv for kv in ppl.items())))
spread = max(ppl.values()) / min(ppl.values()) - 1
worst = max(ppl.values()) / floor - 1
print("spread between policies %.2f%% (limit 2%%), above the floor by %.2f%% (limit 15%%)" %
      (100 * spread, 100 * worst))
if trigram:  # what counting train alone reaches: the data's part of the gap
    print("a trigram count model of train: %.3f, %.2f%% above the floor" %
          (trigram, 100 * (trigram / floor - 1)))
ok = spread <= 0.02 and worst <= 0.15
print("PASS" if ok else "FAIL")
sys.exit(0 if ok else 1)
PY
