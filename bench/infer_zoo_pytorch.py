"""The PyTorch side of bench/infer_zoo_vs_pytorch.sh: torchvision's vit_l_16 and Hugging Face's
BertForMaskedLM at bert-large-uncased's sizes on one GPU, bf16, eager, torch.compile (default mode)
and torch.compile(mode="max-autotune"), timed like xpuperf's inference_core (inputs already on the
device, one synchronise per batch). Random weights (no hub access), saved for xpuperf to load, with
a TorchScript trace of the ViT. BERT's inputs have padding (a mask), as the token data's have, and
its output is the most likely token at every position, as xpuperf's bertLarge returns.
Prints JSON lines."""
import argparse, json, time
import torch

p = argparse.ArgumentParser()
p.add_argument("--out", required=True)
p.add_argument("--cases", default="vit,bert")
p.add_argument("--batches", type=int, default=20)
p.add_argument("--queries", type=int, default=200)
p.add_argument("--no-autotune", action="store_true")
p.add_argument("--profile", type=int, default=0, help="N > 0: torch.profiler over N batches, eager and compiled (to stderr)")
a = p.parse_args()
dev = torch.device("cuda")


def emit(**kv):
    print(json.dumps(kv), flush=True)


def time_batches(fn, args, batch):
    with torch.inference_mode():
        for _ in range(5):
            fn(*args)
        torch.cuda.synchronize()
        core = 0.0
        for _ in range(a.batches):
            t = time.perf_counter()
            fn(*args)
            torch.cuda.synchronize()
            core += time.perf_counter() - t
    return batch * a.batches / core


def time_queries(fn, args):
    ms = []
    with torch.inference_mode():
        for _ in range(20):
            fn(*args)
        torch.cuda.synchronize()
        for _ in range(a.queries):
            t = time.perf_counter()
            fn(*args)
            torch.cuda.synchronize()
            ms.append((time.perf_counter() - t) * 1e3)
    ms.sort()
    return {f"p{q}_ms": ms[min(len(ms) - 1, round(q / 100 * (len(ms) - 1)))] for q in (50, 99)}


def profile(case, mode, fn, args):
    """The kernels of a.profile batches by GPU self time, as xpuperf's profile_batches shows its operators."""
    if a.profile <= 0:
        return
    import sys
    with torch.inference_mode():
        fn(*args)
        torch.cuda.synchronize()
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA,
                                                torch.profiler.ProfilerActivity.CPU]) as prof:
            for _ in range(a.profile):
                fn(*args)
            torch.cuda.synchronize()
    print(f"\n{case} {mode}, {a.profile} batches:", file=sys.stderr)
    print(prof.key_averages().table(sort_by="self_cuda_time_total", row_limit=15), file=sys.stderr, flush=True)


def measure(case, fn, batch_args, one_args, batch):
    emit(case=case, mode="eager", samples_per_s=time_batches(fn, batch_args, batch), **time_queries(fn, one_args))
    profile(case, "eager", fn, batch_args)
    modes = ["default"] + ([] if a.no_autotune else ["max-autotune"])
    for mode in modes:
        torch._dynamo.reset()
        try:
            compiled = torch.compile(fn, mode=mode)
            emit(case=case, mode=f"compile-{mode}", samples_per_s=time_batches(compiled, batch_args, batch),
                 **time_queries(compiled, one_args))
            if mode == "default":
                profile(case, "compile-default", compiled, batch_args)
        except Exception as e:  # reported, not fatal: the other rows still count
            emit(case=case, mode=f"compile-{mode}", error=f"{type(e).__name__}: {e}"[:300])


if "vit" in a.cases:
    import torchvision
    torch.manual_seed(1234)
    vit = torchvision.models.vit_l_16().eval()
    emit(case="vit_l_16", parameters=sum(t.numel() for t in vit.parameters()))
    torch.save(dict(vit.state_dict()), f"{a.out}/vit_l_16.pth")
    # Without gradients nn.MultiheadAttention takes its fused path (the one inference runs); the
    # trace check would compare it with the unfused one.
    with torch.no_grad():
        trace = torch.jit.trace(vit, torch.randn(1, 3, 224, 224), check_trace=False)
    torch.jit.save(trace, f"{a.out}/vit_l_16_ts.pt")
    vit = vit.to(dev, torch.bfloat16)
    x = torch.randn(32, 3, 224, 224, device=dev, dtype=torch.bfloat16)
    measure("vit_l_16", vit, (x,), (x[:1].contiguous(),), 32)
    del vit, x

if "bert" in a.cases:
    import transformers
    torch.manual_seed(1234)
    config = transformers.BertConfig(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
                                     intermediate_size=4096)
    bert = transformers.BertForMaskedLM(config).eval()
    emit(case="bertLarge", parameters=sum(t.numel() for t in bert.parameters()))
    torch.save(dict(bert.state_dict()), f"{a.out}/bert_large.pth")
    bert = bert.to(dev, torch.bfloat16)
    ids = torch.randint(1000, 30000, (32, 512), device=dev)
    mask = torch.ones(32, 512, dtype=torch.long, device=dev)
    for i in range(32):  # sequences of 256 to 512 real tokens, then padding
        mask[i, 256 + (i * 8) % 256:] = 0

    def predict(ids, mask):
        return bert(input_ids=ids, attention_mask=mask).logits.argmax(-1)

    one_mask = mask[:1].clone()
    one_mask[0, 400:] = 0
    measure("bertLarge", predict, (ids, mask), (ids[:1].contiguous(), one_mask), 32)
