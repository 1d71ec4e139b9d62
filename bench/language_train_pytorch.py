"""Hugging Face's side of bench/language_train_vs_pytorch.sh: training throughput of
GPT2LMHeadModel (16 x 1024 tokens) and BertForMaskedLM (32 x 512, 15 % of the tokens masked),
default configs, random weights, bf16 autocast over fp32 weights, the cases' AdamW (fused) and
gradient clipping, eager and torch.compile; peak device memory; optionally the CUDA kernels by
time (where the time goes). Prints one JSON object per line."""
import argparse
import time

import torch
import transformers

from pytorch_common import emit, kernel_table

RECIPES = {  # the cases' _base.yaml
    "gpt2": dict(batch=16, length=1024, lr=6e-4, betas=(0.9, 0.95), wd=0.1, eps=1e-8),
    "bert": dict(batch=32, length=512, lr=2e-4, betas=(0.9, 0.999), wd=0.01, eps=1e-6),
}


def build(case):
    if case == "gpt2":
        return transformers.GPT2LMHeadModel(transformers.GPT2Config())
    return transformers.BertForMaskedLM(transformers.BertConfig())


def batch(case, device):
    r = RECIPES[case]
    g = torch.Generator().manual_seed(7)
    if case == "gpt2":
        ids = torch.randint(50257, (r["batch"], r["length"]), generator=g)
        return dict(input_ids=ids.to(device), labels=ids.to(device))
    ids = torch.randint(1000, 30522, (r["batch"], r["length"]), generator=g)
    labels = torch.full_like(ids, -100)
    masked = torch.rand(ids.shape, generator=g) < 0.15
    labels[masked] = ids[masked]
    ids[masked] = 103  # [MASK]
    return dict(input_ids=ids.to(device), labels=labels.to(device),
                attention_mask=torch.ones_like(ids).to(device))


def throughput(case, mode, steps, warmup, device, profile=False):
    r = RECIPES[case]
    torch.backends.cuda.matmul.allow_tf32 = True
    model = build(case).to(device).train()
    decay = [p for p in model.parameters() if p.dim() > 1]
    no_decay = [p for p in model.parameters() if p.dim() <= 1]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": r["wd"]}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=r["lr"], betas=r["betas"], eps=r["eps"], fused=True)
    inputs = batch(case, device)

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(**inputs).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    run = torch.compile(step) if mode == "compile" else step
    for _ in range(warmup):
        run()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    t = time.perf_counter()
    for _ in range(steps):
        run()
    torch.cuda.synchronize()
    seconds = time.perf_counter() - t
    emit(figure="throughput", case=case, mode=mode, sequences_per_s=r["batch"] * steps / seconds,
         tokens_per_s=r["batch"] * r["length"] * steps / seconds, peak_mib=torch.cuda.max_memory_allocated() / 2**20)
    if profile:
        kernel_table(case, mode, run, top=15)
    del model, opt
    torch.cuda.empty_cache()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", default="gpt2,bert")
    ap.add_argument("--modes", default="eager,compile")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--profile", default="", help="cases whose kernels to list")
    a = ap.parse_args()
    emit(figure="versions", torch=torch.__version__, transformers=transformers.__version__,
         gpu=torch.cuda.get_device_name(0))
    for case in a.cases.split(","):
        for mode in a.modes.split(","):
            throughput(case, mode, a.steps, 10 if mode == "compile" else 3, "cuda",
                       profile=case in a.profile.split(","))
