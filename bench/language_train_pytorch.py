"""Hugging Face's side of bench/language_train_vs_pytorch.sh: training throughput of
GPT2LMHeadModel (16 x 1024 tokens), BertForMaskedLM (32 x 512, 15 % of the tokens masked), default
configs, LlamaForCausalLM at Llama-3.2-1B's shape (8 x 2048, the llama case's), MixtralForCausalLM at the
mixtral case's reduced shape (4 x 2048: Hugging Face's eager step runs out of an H100's memory at the case's 8;
its load-balancing loss included), GPT2LMHeadModel at
CPM-1 medium's (16 x 512, the cpm case's) and, as Hugging Face has no GLM, the plain-PyTorch GLM of
bench/glm_reference.py at GLM-large's (16 x 512 positions, a blank-infilling batch, dropout 0.1: the glm
case's), random weights, bf16 autocast over fp32 weights (cpm, glm: fp16 with PyTorch's dynamic loss
scaler, as the cases), the cases' AdamW (fused) and gradient clipping,
eager and torch.compile; peak device memory; optionally the CUDA kernels by
time (where the time goes). Prints one JSON object per line."""
import argparse

import torch
import transformers
from torch.nn import functional as F

from glm_reference import Glm
from pytorch_common import emit, kernel_table, timed_steps

RECIPES = {  # the cases' _base.yaml
    "gpt2": dict(batch=16, length=1024, lr=6e-4, betas=(0.9, 0.95), wd=0.1, eps=1e-8),
    "bert": dict(batch=32, length=512, lr=2e-4, betas=(0.9, 0.999), wd=0.01, eps=1e-6),
    "llama": dict(batch=8, length=2048, lr=3e-4, betas=(0.9, 0.95), wd=0.1, eps=1e-8),
    "cpm": dict(batch=16, length=512, lr=3e-4, betas=(0.9, 0.95), wd=0.05, eps=1e-8, fp16=True),
    "mixtral": dict(batch=4, length=2048, lr=3e-4, betas=(0.9, 0.95), wd=0.1, eps=1e-8),
    "glm": dict(batch=16, length=512, lr=3e-4, betas=(0.9, 0.95), wd=0.1, eps=1e-8, fp16=True),
}
VOCAB = {"gpt2": 50257, "llama": 128256, "cpm": 30000, "mixtral": 128256}


def llama_config():
    """Llama-3.2-1B's shape, as cases/training/llama/libtorch/config/_base.yaml."""
    rope = dict(rope_type="llama3", factor=32.0, low_freq_factor=1.0, high_freq_factor=4.0,
                original_max_position_embeddings=8192)
    sizes = dict(vocab_size=128256, hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
                 num_attention_heads=32, num_key_value_heads=8, max_position_embeddings=131072, rms_norm_eps=1e-5,
                 tie_word_embeddings=True)
    if int(transformers.__version__.split(".")[0]) >= 5:  # transformers 5 holds rope_theta in rope_parameters
        sizes["rope_parameters"] = dict(rope, rope_theta=500000.0)
    else:
        sizes.update(rope_theta=500000.0, rope_scaling=rope)
    return transformers.LlamaConfig(**sizes)


def mixtral_config():
    """The mixtral case's reduced shape (its _base.yaml): 16 layers of 1,024, 8 experts of 3,584, 2 a
    token, grouped-query attention 16 / 4, Llama 3's vocabulary untied; Mixtral's rope_theta (1e6, the
    default) and its load-balancing loss at the case's coefficient."""
    return transformers.MixtralConfig(vocab_size=128256, hidden_size=1024, intermediate_size=3584,
                                      num_hidden_layers=16, num_attention_heads=16, num_key_value_heads=4,
                                      max_position_embeddings=32768, num_local_experts=8, num_experts_per_tok=2,
                                      tie_word_embeddings=False, output_router_logits=True,
                                      router_aux_loss_coef=0.02)


def build(case):
    if case == "glm":  # GLM-large: 24 layers of 1,024, 16 heads, 30,592 ids, 512 positions
        return Glm(vocab=30592, max_sequence_length=512, layers=24, hidden=1024, heads=16, dropout=0.1)
    if case == "mixtral":
        return transformers.MixtralForCausalLM(mixtral_config())
    if case == "gpt2":
        return transformers.GPT2LMHeadModel(transformers.GPT2Config())
    if case == "llama":
        return transformers.LlamaForCausalLM(llama_config())
    if case == "cpm":  # CPM-1 medium: GPT-2's layout, 24 layers of 1,024, 16 heads, 30,000 pieces
        return transformers.GPT2LMHeadModel(transformers.GPT2Config(vocab_size=30000, n_embd=1024, n_layer=24,
                                                                    n_head=16))
    return transformers.BertForMaskedLM(transformers.BertConfig())


def batch(case, device):
    r = RECIPES[case]
    g = torch.Generator().manual_seed(7)
    if case == "glm":  # part A of 444 text tokens and 22 blanks, part B their fills: the case's shape
        n, length, sep = r["batch"], r["length"], 445
        ids = torch.randint(1000, 30522, (n, length), generator=g)
        targets = torch.full_like(ids, -100)
        targets[:, sep - 1:sep + 66] = ids[:, sep:sep + 67]
        positions = torch.arange(length).repeat(n, 1)
        positions[:, sep:] = torch.randint(1, sep, (n, length - sep), generator=g)
        blocks = torch.zeros_like(ids)
        blocks[:, sep:] = torch.arange(1, length - sep + 1) % 4 + 1
        return dict(ids=ids.to(device), positions=positions.to(device), block_positions=blocks.to(device),
                    sep=torch.full((n,), sep).to(device), targets=targets.to(device))
    if case in VOCAB:
        ids = torch.randint(VOCAB[case], (r["batch"], r["length"]), generator=g)
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
    fp16 = r.get("fp16", False)
    scaler = torch.amp.GradScaler("cuda", enabled=fp16)

    def forward_loss():
        if case != "glm":
            return model(**inputs).loss
        logits = model(inputs["ids"], inputs["positions"], inputs["block_positions"], inputs["sep"])
        return F.cross_entropy(logits.reshape(-1, logits.size(-1)).float(), inputs["targets"].reshape(-1))

    def step():
        with torch.autocast("cuda", dtype=torch.float16 if fp16 else torch.bfloat16):
            loss = forward_loss()
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=True)
        return loss

    run, seconds, peak_mib = timed_steps(step, mode, warmup, steps)
    emit(figure="throughput", case=case, mode=mode, sequences_per_s=r["batch"] * steps / seconds,
         tokens_per_s=r["batch"] * r["length"] * steps / seconds, peak_mib=peak_mib)
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
