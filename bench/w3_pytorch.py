"""W3 (bench/WORKLOADS.md) in PyTorch, as the word_language_model example trains it: its
RNNModel (embedding, dropout, nn.LSTM through cuDNN, dropout, decoder) in the medium form
(emsize = nhid = 650, 2 layers, dropout 0.5, tied weights) over a 33,278-word vocabulary
(WikiText-2's), bptt 35, SGD at lr 20 without momentum, gradient clipping at 0.25 (after
unscaling under amp_fp16, as the AMP recipe says), the hidden state detached between
batches (repackage_hidden). Tokens are random ids already on the GPU: the step time does
not depend on which words they are. Eager, fp32 / tf32 / autocast fp16 / autocast bf16.
Prints one JSON object: ms/step per policy and batch (median over timed windows, CUDA
events). Written here from the example's published structure; nothing is downloaded."""
import torch
import torch.nn as nn

from torch_timing import main, set_math, timed_median

VOCAB, DIM, LAYERS, DROPOUT, BPTT = 33278, 650, 2, 0.5, 35


class RNNModel(nn.Module):
    """The example's model: sizes default to W3's (word-lm-medium on 33,278 words);
    lm_reference.py builds it for other vocabularies and presets."""

    def __init__(self, vocab=VOCAB, dim=DIM, layers=LAYERS, dropout=DROPOUT, tied=True):
        super().__init__()
        self.vocab = vocab
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(vocab, dim)
        self.rnn = nn.LSTM(dim, dim, layers, dropout=dropout)
        self.decoder = nn.Linear(dim, vocab)
        if tied:
            self.decoder.weight = self.encoder.weight
        nn.init.uniform_(self.encoder.weight, -0.1, 0.1)
        if not tied:
            nn.init.uniform_(self.decoder.weight, -0.1, 0.1)
        nn.init.zeros_(self.decoder.bias)

    def forward(self, x, hidden):
        emb = self.drop(self.encoder(x))
        out, hidden = self.rnn(emb, hidden)
        return self.decoder(self.drop(out)).view(-1, self.vocab), hidden


def time_policy(policy, batch, windows, steps_per_window, warmup):
    set_math(policy)
    torch.manual_seed(0)
    model = RNNModel().cuda().train()
    opt = torch.optim.SGD(model.parameters(), lr=20.0)
    loss_fn = nn.CrossEntropyLoss()
    scaler = torch.amp.GradScaler("cuda") if policy == "amp_fp16" else None
    dtype = {"amp_fp16": torch.float16, "amp_bf16": torch.bfloat16}.get(policy)
    x = torch.randint(0, VOCAB, (BPTT, batch), device="cuda")
    y = torch.randint(0, VOCAB, (BPTT * batch,), device="cuda")
    zeros = torch.zeros(LAYERS, batch, DIM, device="cuda")
    state = {"hidden": (zeros, zeros.clone())}

    def step():
        hidden = tuple(h.detach() for h in state["hidden"])
        opt.zero_grad(set_to_none=True)
        if dtype is not None:
            with torch.autocast("cuda", dtype=dtype):
                out, hidden = model(x, hidden)
                loss = loss_fn(out.float(), y)
        else:
            out, hidden = model(x, hidden)
            loss = loss_fn(out, y)
        state["hidden"] = hidden
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.unscale_(opt)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
            opt.step()

    return timed_median(step, windows, steps_per_window, warmup)


if __name__ == "__main__":
    main(time_policy, "20,80", "fp32,tf32,amp_fp16,amp_bf16", 5, 20, 10)
