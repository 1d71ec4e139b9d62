"""GLM in plain PyTorch, laid out and named as GLM's own code builds it (Megatron-LM's GPT-2 with a
second position table: word_embeddings, transformer.position_embeddings,
transformer.block_position_embeddings, transformer.layers.<i>.{input_layernorm,
attention.query_key_value, attention.dense, post_attention_layernorm, mlp.dense_h_to_4h,
mlp.dense_4h_to_h}, transformer.final_layernorm; 1 + max_sequence_length rows in each position
table; part A attends both ways, part B causally, masked GLM's way: scores × mask − 10000 × (1 −
mask)). Hugging Face's transformers has no GLM-large, so this is the reference xpuperf's GLM
(models/glm.h) is checked against, from the same weights (tests/models/models_test.cpp).

Writes OUT_DIR/glm.weights.pt (the state_dict in GLM's names, a plain dict) and OUT_DIR/glm.io.pt
({"input", "targets", "positions", "block_positions", "sep", "output" (logits), "loss"}) for a
small GLM (GLM_SMALL) on a fixed blank-infilling batch; where CUDA is, also the first training step
on the GPU without dropout in fp32 (TF32 off) and bf16 autocast, as OUT_DIR/glm.step.pt
({"loss_fp32", "grad_norm_fp32", "loss_bf16", "grad_norm_bf16", "output_bf16"}).
Usage: glm_reference.py OUT_DIR"""
import math
import sys

import torch
from torch import nn
from torch.nn import functional as F

# models_test.cpp builds the same: GlmConfig{1024, 128, 4, 256, 8, 0.0}.
GLM_SMALL = dict(vocab=1024, max_sequence_length=128, layers=4, hidden=256, heads=8)


def gelu(x):  # GLM's gelu_impl: the tanh approximation
    return 0.5 * x * (1.0 + torch.tanh(0.7978845608028654 * x * (1.0 + 0.044715 * x * x)))


class GlmLayer(nn.Module):
    def __init__(self, hidden, heads, dropout=0.0):
        super().__init__()
        self.heads = heads
        self.dropout = nn.Dropout(dropout)  # GLM's attention and residual dropout
        self.input_layernorm = nn.LayerNorm(hidden, eps=1e-5)
        self.attention = nn.Module()
        self.attention.query_key_value = nn.Linear(hidden, 3 * hidden)
        self.attention.dense = nn.Linear(hidden, hidden)
        self.post_attention_layernorm = nn.LayerNorm(hidden, eps=1e-5)
        self.mlp = nn.Module()
        self.mlp.dense_h_to_4h = nn.Linear(hidden, 4 * hidden)
        self.mlp.dense_4h_to_h = nn.Linear(4 * hidden, hidden)

    def forward(self, x, mask):
        b, t, h = x.shape
        d = h // self.heads
        q, k, v = self.attention.query_key_value(self.input_layernorm(x)).split(h, dim=-1)
        q, k, v = (y.view(b, t, self.heads, d).transpose(1, 2) for y in (q, k, v))
        scores = q @ k.transpose(-1, -2) / math.sqrt(d)
        scores = scores * mask - 10000.0 * (1.0 - mask)
        context = (self.dropout(F.softmax(scores, dim=-1)) @ v).transpose(1, 2).reshape(b, t, h)
        x = x + self.dropout(self.attention.dense(context))
        y = self.mlp.dense_4h_to_h(gelu(self.mlp.dense_h_to_4h(self.post_attention_layernorm(x))))
        return x + self.dropout(y)


class Glm(nn.Module):
    def __init__(self, vocab, max_sequence_length, layers, hidden, heads, dropout=0.0):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.word_embeddings = nn.Embedding(vocab, hidden)
        self.transformer = nn.Module()
        self.transformer.position_embeddings = nn.Embedding(max_sequence_length + 1, hidden)
        self.transformer.block_position_embeddings = nn.Embedding(max_sequence_length + 1, hidden)
        self.transformer.layers = nn.ModuleList(GlmLayer(hidden, heads, dropout) for _ in range(layers))
        self.transformer.final_layernorm = nn.LayerNorm(hidden, eps=1e-5)
        for name, p in self.named_parameters():
            if name.endswith("weight") and p.dim() == 2:
                nn.init.normal_(p, std=0.02)

    def forward(self, ids, positions, block_positions, sep):
        t = ids.size(1)
        x = self.word_embeddings(ids) + self.transformer.position_embeddings(positions)
        x = self.dropout(x + self.transformer.block_position_embeddings(block_positions))
        index = torch.arange(t, device=ids.device)
        mask = (index.view(1, t, 1) >= index.view(1, 1, t)) | (index.view(1, 1, t) < sep.view(-1, 1, 1))
        mask = mask.unsqueeze(1).to(x.dtype)
        for layer in self.transformer.layers:
            x = layer(x, mask)
        return F.linear(self.transformer.final_layernorm(x), self.word_embeddings.weight)


def blank_batch(vocab, length=64):
    """Two rows: part A of 40 and 30 tokens, then two blanks' fills each, then padding."""
    g = torch.Generator().manual_seed(17)
    ids = torch.randint(0, vocab - 2, (2, length), generator=g)
    targets = torch.full((2, length), -100)
    positions = torch.arange(length).repeat(2, 1)
    block_positions = torch.zeros(2, length, dtype=torch.long)
    sep = torch.tensor([40, 30])
    for row, (a, fills) in enumerate([(40, [(5, 3), (20, 4)]), (30, [(12, 2), (3, 5)])]):
        at = a
        for mask_at, n in fills:
            ids[row, at] = vocab - 2  # [sop]
            targets[row, at:at + n + 1] = torch.randint(0, vocab - 2, (n + 1,), generator=g)
            targets[row, at + n] = vocab - 1  # [eop]
            ids[row, at + 1:at + n + 1] = targets[row, at:at + n]
            positions[row, at:at + n + 1] = mask_at
            block_positions[row, at:at + n + 1] = torch.arange(1, n + 2)
            at += n + 1
        positions[row, at:] = 0
        ids[row, at:] = 0
    return ids, targets, positions, block_positions, sep


def main():
    out = sys.argv[1]
    torch.manual_seed(13)
    model = Glm(**GLM_SMALL).eval()
    ids, targets, positions, block_positions, sep = blank_batch(GLM_SMALL["vocab"])
    with torch.no_grad():
        logits = model(ids, positions, block_positions, sep)
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))
    torch.save(dict(model.state_dict()), f"{out}/glm.weights.pt")
    torch.save({"input": ids, "targets": targets, "positions": positions, "block_positions": block_positions,
                "sep": sep, "output": logits, "loss": loss.reshape(1)}, f"{out}/glm.io.pt")
    if torch.cuda.is_available():
        torch.backends.cuda.matmul.allow_tf32 = False
        m = model.to("cuda")
        step = {}
        for precision in ("fp32", "bf16"):
            m.zero_grad(set_to_none=True)
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=precision == "bf16"):
                logits = m(ids.cuda(), positions.cuda(), block_positions.cuda(), sep.cuda())
                loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)).float(), targets.cuda().reshape(-1))
            loss.backward()
            norm = torch.stack([p.grad.float().norm() for p in m.parameters() if p.grad is not None]).norm()
            step[f"loss_{precision}"] = loss.detach().float().cpu().reshape(1)
            step[f"grad_norm_{precision}"] = norm.cpu().reshape(1)
            if precision == "bf16":
                step["output_bf16"] = logits.detach().float().cpu()
        torch.save(step, f"{out}/glm.step.pt")
    print(torch.__version__, sum(p.numel() for p in model.parameters()))


if __name__ == "__main__":
    main()
