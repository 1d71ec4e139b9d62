"""PyTorch's side of bench/lora_train_vs_pytorch.sh: LoRA fine-tuning as FlagPerf's
llama2_7b_finetune runs it (r 8, alpha 32, dropout 0.05 on q_proj and v_proj, sequence 512,
batch 1, one GPU) on Hugging Face's LlamaForCausalLM at Llama-2-7B's shape, random weights. The
adapters are PEFT's own (get_peft_model with a LoraConfig) where PEFT is installed, else PEFT's
LoraLayer written in plain PyTorch (--adapters plain): y = base(x) + (alpha / r) * B(A(dropout(x))),
A Kaiming-uniform, B zeros. The base frozen in bf16, the adapters in fp32 under bf16 autocast, fused
AdamW over the adapters only, clipping at 1.0; eager and torch.compile. Prints one JSON object a
line: tokens/s and peak device memory, and which adapters ran."""
import argparse
import math

import torch
import transformers

from pytorch_common import emit, timed_steps


class LoraLinear(torch.nn.Module):
    """PEFT's LoraLayer on a frozen nn.Linear."""

    def __init__(self, base, rank, alpha, dropout):
        super().__init__()
        self.base = base
        self.lora_A = torch.nn.Linear(base.in_features, rank, bias=False, device=base.weight.device)
        self.lora_B = torch.nn.Linear(rank, base.out_features, bias=False, device=base.weight.device)
        torch.nn.init.kaiming_uniform_(self.lora_A.weight, a=math.sqrt(5))
        torch.nn.init.zeros_(self.lora_B.weight)
        self.dropout = torch.nn.Dropout(dropout)
        self.scaling = alpha / rank

    def forward(self, x):
        return self.base(x) + self.lora_B(self.lora_A(self.dropout(x))) * self.scaling


def llama2_7b():
    sizes = dict(vocab_size=32000, hidden_size=4096, intermediate_size=11008, num_hidden_layers=32,
                 num_attention_heads=32, num_key_value_heads=32, max_position_embeddings=4096, rms_norm_eps=1e-5,
                 tie_word_embeddings=False)
    if int(transformers.__version__.split(".")[0]) >= 5:
        sizes["rope_parameters"] = dict(rope_type="default", rope_theta=10000.0)
    else:
        sizes["rope_theta"] = 10000.0
    return transformers.LlamaConfig(**sizes)


def peft_available():
    try:
        import peft  # noqa: F401
        return True
    except ImportError:
        return False


def add_adapters(model, kind, rank, alpha, dropout):
    """The base frozen, adapters on q_proj and v_proj in fp32: PEFT's, or PEFT's layer written out."""
    model.requires_grad_(False)
    if kind == "peft":
        import peft
        config = peft.LoraConfig(r=rank, lora_alpha=alpha, lora_dropout=dropout, target_modules=["q_proj", "v_proj"],
                                 bias="none", task_type="CAUSAL_LM")
        # autocast_adapter_dtype (the default) keeps the adapters in fp32 over the bf16 base.
        return peft.get_peft_model(model, config)
    for layer in model.model.layers:
        layer.self_attn.q_proj = LoraLinear(layer.self_attn.q_proj, rank, alpha, dropout)
        layer.self_attn.v_proj = LoraLinear(layer.self_attn.v_proj, rank, alpha, dropout)
    return model


def throughput(mode, kind, steps, warmup, rank, alpha, dropout, length, batch):
    torch.backends.cuda.matmul.allow_tf32 = True
    with torch.device("cuda"):
        model = transformers.LlamaForCausalLM(llama2_7b()).to(torch.bfloat16)
    model = add_adapters(model, kind, rank, alpha, dropout)
    model.train()
    adapters = [p for n, p in model.named_parameters() if "lora_" in n]
    opt = torch.optim.AdamW(adapters, lr=3e-4, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.0, fused=True)
    g = torch.Generator().manual_seed(7)
    ids = torch.randint(32000, (batch, length), generator=g).cuda()

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(adapters, 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    _, seconds, peak_mib = timed_steps(step, mode, warmup, steps)
    emit(figure="throughput", case="llama2_7b_lora", mode=mode, adapters=kind,
         tokens_per_s=batch * length * steps / seconds, peak_mib=peak_mib,
         trained=sum(p.numel() for p in adapters), frozen=sum(p.numel() for p in model.parameters()) - sum(
             p.numel() for p in adapters))
    del model, opt
    torch.cuda.empty_cache()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--modes", default="eager,compile")
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--adapters", choices=("auto", "peft", "plain"), default="auto",
                    help="PEFT's LoRA (auto: where PEFT is installed) or its layer in plain PyTorch")
    a = ap.parse_args()
    kind = a.adapters if a.adapters != "auto" else ("peft" if peft_available() else "plain")
    versions = dict(torch=torch.__version__, transformers=transformers.__version__)
    if kind == "peft":
        import peft
        versions["peft"] = peft.__version__
    emit(figure="versions", gpu=torch.cuda.get_device_name(0), adapters=kind, **versions)
    for mode in a.modes.split(","):
        throughput(mode, kind, a.steps, 10 if mode == "compile" else 3, 8, 32, 0.05, 512, 1)
