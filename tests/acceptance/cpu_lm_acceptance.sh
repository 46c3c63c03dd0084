#!/usr/bin/env bash
# Issue 15's CPU acceptance: word-lm-small for 2 epochs on a generated ~200k-token word
# corpus (a folder of train.txt, valid.txt, test.txt with <eos> line ends, written here by
# a seeded order-2 source over 3,000 Zipf-weighted words), fp32 against mixed_fp16
# (emulated) in lockstep on the CPU backend. Passes when both test perplexities are well
# below the corpus's unigram perplexity (under half of it) and mixed_fp16 ends within 3%
# of fp32. About 4 minutes on an idle 2-core machine.
# Usage: tests/acceptance/cpu_lm_acceptance.sh MIXLAB_CLI OUT_DIR
set -uo pipefail
cli="$1"; out="$2"
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$out/corpus"
python3 - "$out/corpus" <<'PY'
import bisect, random, sys
random.seed(7)
V = 3000
cdf, total = [], 0.0
for i in range(V):
    total += 1.0 / (i + 1)
    cdf.append(total)
def draw():
    return min(bisect.bisect(cdf, random.random() * total), V - 1)
succ, probs = {}, [0.5, 0.2, 0.1, 0.1, 0.05, 0.05]
def next_word(a, b):
    s = succ.setdefault((a % 50, b), [draw() for _ in probs])
    r, acc = random.random(), 0.0
    for w, p in zip(s, probs):
        acc += p
        if r < acc:
            return w
    return s[-1]
def text(n):
    lines, line, a, b = [], [], draw(), draw()
    for _ in range(n):
        w = next_word(a, b)
        line.append("w%d" % w)
        a, b = b, w
        if len(line) >= random.randint(8, 25):
            lines.append(" " + " ".join(line) + " \n")
            line = []
    if line:
        lines.append(" " + " ".join(line) + " \n")
    return "".join(lines)
for name, n in (("train.txt", 200000), ("valid.txt", 20000), ("test.txt", 20000)):
    open("%s/%s" % (sys.argv[1], name), "w").write(text(n))
PY
"$cli" corpus "$out/corpus" --json > "$out/corpus.json" || exit 1
OMP_NUM_THREADS="${OMP_NUM_THREADS:-$(nproc)}" "$cli" compare \
  --model "$here/../../resources/models/word-lm-small.json" --dataset "$out/corpus" \
  --epochs 2 --device cpu --policies fp32,mixed_fp16 --sample-words 30 \
  --log-json "$out/lm.json" > "$out/lm.txt" 2> "$out/lm.err" || { tail "$out/lm.err"; echo FAIL; exit 1; }
grep "done in" "$out/lm.err"
cat "$out/lm.txt"
python3 - "$out/corpus.json" "$out/lm.json" <<'PY'
import json, sys
corpus = json.load(open(sys.argv[1]))
unigram = corpus["unigram_perplexity"]["test"] if isinstance(corpus.get("unigram_perplexity"), dict) \
    else corpus.get("test_unigram_perplexity")
log = json.load(open(sys.argv[2]))
ppl = {r["policy"]: r["summary"]["final_test_perplexity"] for r in log["runs"]}
gap = abs(ppl["mixed_fp16"] / ppl["fp32"] - 1)
print("unigram perplexity %.1f; test perplexity fp32 %.2f, mixed_fp16 %.2f (%.2f%% apart)" %
      (unigram, ppl["fp32"], ppl["mixed_fp16"], 100 * gap))
ok = max(ppl.values()) < 0.5 * unigram and gap <= 0.03
print("PASS" if ok else "FAIL")
sys.exit(0 if ok else 1)
PY
