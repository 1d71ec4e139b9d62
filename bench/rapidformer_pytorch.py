"""PyTorch's side of bench/rapidformer_vs_pytorch.sh, run under torchrun on the GPUs at hand:
Rapidformer's shapes with Hugging Face's models (random weights, random ids), DDP for the plain
rows and FSDP2 (`fully_shard`) for the sharded ones. Every rank builds the same model; fp32 params,
the forward under autocast for bf16 (as xpuperf's cases), TF32 off for fp32; AdamW; gradient
accumulation with no_sync / set_requires_gradient_sync. Prints one JSON object a line (rank 0):
samples/s over the timed steps (global batch / step time), peak allocated memory per GPU, the loss.

  bert   BertForMaskedLM base, 512 tokens, 15 % masked; --micro 16 --global 64 (Rapidformer's)
  gpt13  GPT2LMHeadModel at Megatron's 1.3B (24 layers, 2048 wide, 32 heads), 1024 tokens;
         --micro 1 --global 4
Modes: ddp, fsdp_grad_op (fully_shard, reshard_after_forward=False: ZeRO-2's state),
fsdp_full (reshard_after_forward=True: ZeRO-3)."""
import argparse
import json
import os
import time

import torch
import torch.distributed as dist
import transformers


def build(case):
    if case == "bert":
        return transformers.BertForMaskedLM(transformers.BertConfig())
    return transformers.GPT2LMHeadModel(
        transformers.GPT2Config(n_layer=24, n_embd=2048, n_head=32, n_positions=1024))


def batch(case, micro, device, seed):
    g = torch.Generator().manual_seed(seed)
    if case == "gpt13":
        ids = torch.randint(50257, (micro, 1024), generator=g)
        return dict(input_ids=ids.to(device), labels=ids.to(device))
    ids = torch.randint(1000, 30522, (micro, 512), generator=g)
    labels = torch.full_like(ids, -100)
    masked = torch.rand(ids.shape, generator=g) < 0.15
    labels[masked] = ids[masked]
    ids[masked] = 103
    return dict(input_ids=ids.to(device), labels=labels.to(device), attention_mask=torch.ones_like(ids).to(device))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--case", required=True, choices=["bert", "gpt13"])
    p.add_argument("--mode", required=True, choices=["ddp", "fsdp_grad_op", "fsdp_full"])
    p.add_argument("--precision", default="bf16", choices=["fp32", "bf16"])
    p.add_argument("--micro", type=int, required=True)
    p.add_argument("--global-batch", type=int, required=True)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=3)
    a = p.parse_args()
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device("cuda", int(os.environ["LOCAL_RANK"]))
    torch.cuda.set_device(device)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = a.precision != "fp32"
    accumulation = a.global_batch // (a.micro * world)
    torch.manual_seed(1)
    model = build(a.case).to(device).train()
    if a.mode == "ddp":
        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[device.index])
    else:
        from torch.distributed.fsdp import fully_shard
        blocks = model.bert.encoder.layer if a.case == "bert" else model.transformer.h
        reshard = a.mode == "fsdp_full"
        for block in blocks:
            fully_shard(block, reshard_after_forward=reshard)
        fully_shard(model, reshard_after_forward=reshard)
    try:
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01, fused=True)
    except (RuntimeError, TypeError):
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01)
    inputs = [batch(a.case, a.micro, device, 100 * rank + k) for k in range(accumulation)]

    def step():
        losses = []
        for k in range(accumulation):
            last = k + 1 == accumulation
            if a.mode == "ddp":
                model.require_backward_grad_sync = last
            else:
                model.set_requires_gradient_sync(last)
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=a.precision == "bf16"):
                loss = model(**inputs[k]).loss / accumulation
            loss.backward()
            losses.append(loss.detach())
        opt.step()
        opt.zero_grad(set_to_none=True)
        return torch.stack(losses).sum()

    for _ in range(a.warmup):
        step()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(a.steps):
        loss = step()
    torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    peak = torch.tensor([torch.cuda.max_memory_allocated(device) / 2**20], device=device)
    dist.all_reduce(peak, op=dist.ReduceOp.MAX)
    if rank == 0:
        print(json.dumps(dict(case=a.case, mode=a.mode, precision=a.precision, world=world, micro=a.micro,
                              global_batch=a.global_batch, samples_per_s=a.steps * a.global_batch / seconds,
                              peak_mib=peak.item(), loss=loss.item())), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
