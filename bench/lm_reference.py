"""The accuracy reference for issue 15's language model: PyTorch's word_language_model
example (main.py) trained on a corpus folder MixLab wrote (`mixlab-cli corpus
synthetic-text --write FOLDER`), so MixLab's test perplexity after N epochs can be read
against the example's on the same text with the same recipe: the RNNModel of
w3_pytorch.py, batch 20, bptt 35 (the last, shorter window of an epoch included, as the
example does), SGD lr 20 without momentum, gradient clipping 0.25 (after unscaling under
amp_fp16), the hidden state detached between windows and zeroed per epoch, the learning
rate divided by 4 when validation loss does not improve.

Two differences from main.py, both to read MixLab's numbers like for like: the files are
read as one whitespace-separated stream (no <eos> at line ends; the written files break
lines only to keep them short: the stream is MixLab's synthetic-text itself; --eos reads
them as data.py and MixLab's folder reader do), and validation and test run at the training batch (the
example uses 10 columns) and report the current model each epoch (the example reports
the best-validation model once at the end; printed too, as best_valid_test_perplexity).

Prints one JSON object with per-epoch train/valid/test perplexity. Nothing is downloaded."""
import argparse
import json
import math
import os
import time

import torch
import torch.nn as nn

from w3_pytorch import RNNModel

PRESETS = {  # word-lm-*.json: dim (= hidden), layers, dropout, tied
    "small": (200, 2, 0.2, False),
    "medium": (650, 2, 0.5, True),
    "large": (1500, 2, 0.65, True),
}


def read_split(folder, name, index, grow, eos):
    """The words of one split; with eos, "<eos>" after every line as data.py adds it."""
    ids = []
    with open(os.path.join(folder, name), encoding="utf-8") as f:
        text = f.read()
    lines = text.splitlines() if eos else [text]
    for line in lines:
        for word in line.split() + (["<eos>"] if eos else []):
            if word not in index:
                if not grow:
                    word = "<unk>"
                if word not in index:
                    index[word] = len(index)
            ids.append(index[word])
    return torch.tensor(ids, dtype=torch.long)


def batchify(ids, columns):
    n = ids.size(0) // columns
    return ids[: n * columns].view(columns, n).t().contiguous().cuda()


def run(a):
    torch.manual_seed(a.seed)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    index = {}
    train = read_split(a.corpus, "train.txt", index, True, a.eos)
    valid = read_split(a.corpus, "valid.txt", index, False, a.eos)
    test = read_split(a.corpus, "test.txt", index, False, a.eos)
    vocab = len(index)
    dim, layers, dropout, tied = PRESETS[a.preset]
    model = RNNModel(vocab, dim, layers, dropout, tied).cuda()
    dtype = {"amp_fp16": torch.float16, "amp_bf16": torch.bfloat16}.get(a.policy)
    scaler = torch.amp.GradScaler("cuda") if a.policy == "amp_fp16" else None
    loss_fn = nn.CrossEntropyLoss()
    train_data, valid_data, test_data = (batchify(d, a.batch) for d in (train, valid, test))

    def zero_state():
        z = torch.zeros(layers, a.batch, dim, device="cuda")
        return (z, z.clone())

    def forward(x, hidden):
        with torch.autocast("cuda", dtype=dtype, enabled=dtype is not None):
            out, hidden = model(x, hidden)
        return out.float(), hidden

    def evaluate(data):
        model.eval()
        total, hidden = 0.0, zero_state()
        with torch.no_grad():
            for i in range(0, data.size(0) - 1, a.bptt):
                n = min(a.bptt, data.size(0) - 1 - i)
                out, hidden = forward(data[i : i + n], hidden)
                total += n * loss_fn(out, data[i + 1 : i + 1 + n].reshape(-1)).item()
        return total / (data.size(0) - 1)

    # The example's update p -= lr * grad, as plain SGD (no momentum) so GradScaler can
    # skip a step whose gradients overflowed.
    opt = torch.optim.SGD(model.parameters(), lr=a.lr)
    lr, best, best_state, epochs = a.lr, None, None, []
    for epoch in range(1, a.epochs + 1):
        model.train()
        started, hidden, total, windows = time.time(), zero_state(), 0.0, 0
        for i in range(0, train_data.size(0) - 1, a.bptt):
            n = min(a.bptt, train_data.size(0) - 1 - i)
            hidden = tuple(h.detach() for h in hidden)
            model.zero_grad(set_to_none=True)
            out, hidden = forward(train_data[i : i + n], hidden)
            loss = loss_fn(out, train_data[i + 1 : i + 1 + n].reshape(-1))
            if scaler is not None:  # unscale, clip, then a step GradScaler skips on inf/NaN
                scaler.scale(loss).backward()
                scaler.unscale_(opt)
                torch.nn.utils.clip_grad_norm_(model.parameters(), a.clip)
                scaler.step(opt)
                scaler.update()
            else:
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), a.clip)
                opt.step()
            total += loss.item()
            windows += 1
        v, t = evaluate(valid_data), evaluate(test_data)
        epochs.append({"epoch": epoch, "lr": lr, "seconds": round(time.time() - started, 1),
                       "train_perplexity": math.exp(total / windows),
                       "valid_perplexity": math.exp(v), "test_perplexity": math.exp(t)})
        print(json.dumps(epochs[-1]), flush=True)
        if best is None or v < best:
            best, best_state = v, {k: p.clone() for k, p in model.state_dict().items()}
        else:
            lr /= 4.0
            for group in opt.param_groups:
                group["lr"] = lr
    model.load_state_dict(best_state)
    return {"corpus": os.path.abspath(a.corpus), "eos": a.eos, "vocab": vocab, "preset": a.preset,
            "policy": a.policy, "batch": a.batch, "bptt": a.bptt, "seed": a.seed,
            "epochs": epochs, "best_valid_test_perplexity": math.exp(evaluate(test_data))}


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("corpus", help="a folder of train.txt, valid.txt, test.txt")
    p.add_argument("--preset", choices=sorted(PRESETS), default="medium")
    p.add_argument("--policy", choices=["fp32", "amp_fp16", "amp_bf16"], default="fp32")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--batch", type=int, default=20)
    p.add_argument("--bptt", type=int, default=35)
    p.add_argument("--lr", type=float, default=20.0)
    p.add_argument("--clip", type=float, default=0.25)
    p.add_argument("--seed", type=int, default=1111)  # the example's
    p.add_argument("--eos", action="store_true",
                   help="read the files as data.py does, <eos> at each line end (the text "
                        "MixLab reads from the same folder)")
    print(json.dumps(run(p.parse_args())))
