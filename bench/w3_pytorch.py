"""W3 (bench/WORKLOADS.md) in PyTorch, as the word_language_model example trains it: its
RNNModel (embedding, dropout, nn.LSTM through cuDNN, dropout, decoder) in the medium form
(emsize = nhid = 650, 2 layers, dropout 0.5, tied weights) over a 33,278-word vocabulary
(WikiText-2's), bptt 35, SGD at lr 20 without momentum, gradient clipping at 0.25 (after
unscaling under amp_fp16, as the AMP recipe says), the hidden state detached between
batches (repackage_hidden). Tokens are random ids already on the GPU: the step time does
not depend on which words they are. Eager, fp32 / tf32 / autocast fp16 / autocast bf16,
and each as one captured CUDA graph (..._graph: torch_timing.py says how; the hidden state
carried in static buffers copied at the step's end).
Prints one JSON object: ms/step per policy and batch (median over timed windows, CUDA
events). Written here from the example's published structure; nothing is downloaded."""
import torch
import torch.nn as nn

from torch_timing import (autocast, backward_and_step, capture, main, parse_policy, set_math,
                          timed_median)

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
    policy, _, graphed = parse_policy(policy)
    set_math(policy)
    torch.manual_seed(0)
    model = RNNModel().cuda().train()
    params = list(model.parameters())
    opt = torch.optim.SGD(params, lr=20.0)
    loss_fn = nn.CrossEntropyLoss()
    scaler = torch.amp.GradScaler("cuda") if policy == "amp_fp16" and not graphed else None
    dtype = {"amp_fp16": torch.float16, "amp_bf16": torch.bfloat16}.get(policy)
    x = torch.randint(0, VOCAB, (BPTT, batch), device="cuda")
    y = torch.randint(0, VOCAB, (BPTT * batch,), device="cuda")
    # The carried state: detached from the last window's graph (repackage_hidden); in a
    # captured step, static buffers the step overwrites after its update.
    hidden = (torch.zeros(LAYERS, batch, DIM, device="cuda"),
              torch.zeros(LAYERS, batch, DIM, device="cuda"))

    def step():
        opt.zero_grad(set_to_none=True)
        with autocast(dtype, graphed):
            out, (h, c) = model(x, hidden)
            loss = loss_fn(out.float(), y)
        backward_and_step(loss, params, opt, policy, graphed, scaler, clip=0.25)
        hidden[0].copy_(h.detach())
        hidden[1].copy_(c.detach())

    return timed_median(capture(step) if graphed else step, windows, steps_per_window, warmup)


if __name__ == "__main__":
    main(time_policy, "20,80", "fp32,tf32,amp_fp16,amp_bf16,fp32_graph,tf32_graph,amp_fp16_graph,"
         "amp_bf16_graph", 5, 20, 10)
