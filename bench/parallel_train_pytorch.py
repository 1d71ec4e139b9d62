"""PyTorch's side of bench/parallel_train_vs_pytorch.sh, started by torchrun on every GPU of the host:
Hugging Face's LlamaForCausalLM at Llama-3.2-1B's shape, or MixtralForCausalLM at the mixtral case's
reduced one (the models, batches and AdamW of bench/language_train_pytorch.py), trained data-parallel in
one of three ways:
  ddp            DistributedDataParallel, bf16 autocast over fp32 weights (what xpuperf's data parallelism does);
  fsdp2          FSDP2 (fully_shard on each decoder layer, then on the model: ZeRO-3's sharding), bf16
                 parameters and fp32 gradient reduction (MixedPrecisionPolicy), as torchtitan trains;
  fsdp2-compile  the same with each decoder layer under torch.compile before it is sharded (torchtitan's order).
Rank 0 prints one JSON line: tokens/s over all ranks and the most device memory any rank held."""
import argparse
import os
import time

import torch
import torch.distributed as dist

from language_train_pytorch import RECIPES, batch, build
from pytorch_common import emit


def wrap(model, case, mode, device):
    if mode == "ddp":  # an expert that no token of a step chose has no gradient on that rank
        return torch.nn.parallel.DistributedDataParallel(model, device_ids=[device.index],
                                                         find_unused_parameters=case == "mixtral")
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    layers = model.model.layers  # Hugging Face's decoder layers (Llama and Mixtral alike)
    for i, layer in enumerate(layers):
        if mode == "fsdp2-compile":
            layer = torch.compile(layer)
            layers[i] = layer
        fully_shard(layer, mp_policy=policy)
    fully_shard(model, mp_policy=policy)
    return model


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--case", default="llama", choices=["llama", "mixtral"])
    ap.add_argument("--mode", default="fsdp2", choices=["ddp", "fsdp2", "fsdp2-compile"])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    a = ap.parse_args()

    local = int(os.environ["LOCAL_RANK"])
    device = torch.device("cuda", local)
    torch.cuda.set_device(device)
    dist.init_process_group("nccl", device_id=device)
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.manual_seed(1234)  # the same initial weights on every rank, as a checkpoint would give
    r = RECIPES[a.case]
    model = wrap(build(a.case).to(device).train(), a.case, a.mode, device)
    decay = [p for p in model.parameters() if p.dim() > 1]
    no_decay = [p for p in model.parameters() if p.dim() <= 1]
    groups = [{"params": decay, "weight_decay": r["wd"]}, {"params": no_decay, "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=r["lr"], betas=r["betas"], eps=r["eps"], fused=True)
    inputs = batch(a.case, device)  # the same ids on every rank: the rate does not depend on them
    autocast = a.mode == "ddp"  # FSDP2 computes in its policy's bf16 parameters

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
            loss = model(**inputs).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(a.warmup):
        step()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    dist.barrier()
    start = time.perf_counter()
    for _ in range(a.steps):
        step()
    torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    ranks = dist.get_world_size()
    peak = torch.tensor([torch.cuda.max_memory_allocated() / 2**20], device=device)
    dist.all_reduce(peak, op=dist.ReduceOp.MAX)
    if dist.get_rank() == 0:
        emit(figure="throughput", case=a.case, mode=a.mode, ranks=ranks, torch=torch.__version__,
             sequences_per_s=ranks * r["batch"] * a.steps / seconds,
             tokens_per_s=ranks * r["batch"] * r["length"] * a.steps / seconds,
             peak_mib=peak.item())
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
