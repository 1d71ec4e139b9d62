"""The llm inference case's PyTorch reference (bench/llm_vs_pytorch.sh): Hugging Face's
LlamaForCausalLM at SIZE's shape with random bf16 weights on the GPU. Prefill: BATCH prompts of SEQ
tokens, eager and torch.compile, logits at the last position (logits_to_keep=1, as xpuperf's case)
and, eager, at every position (Hugging Face's default). Decode: generate() with a static cache and
the forward under torch.compile (fullgraph, CUDA graphs), greedy, PROMPT-token prompts: TTFT = one new
token, TPOT = (NEW new tokens - one) / (NEW - 1) (generate() compiles the forward itself for a
static cache); also eager generate() with its dynamic cache.
One JSON line a measurement, printed as each ends (a later failure keeps the earlier ones).
Usage: llm_pytorch.py --size 7b|1b [--batch 8 --seq 1024 --decode-batches 1,64 --prompt 512 --new 128]"""
import argparse
import json
import time

import torch
import transformers

SIZES = {
    "7b": dict(vocab_size=32000, hidden_size=4096, intermediate_size=11008, num_hidden_layers=32,
               num_attention_heads=32, num_key_value_heads=32, max_position_embeddings=4096),
    "1b": dict(vocab_size=32000, hidden_size=2048, intermediate_size=5632, num_hidden_layers=22,
               num_attention_heads=32, num_key_value_heads=4, max_position_embeddings=2048),
}

ap = argparse.ArgumentParser()
ap.add_argument("--size", default="7b", choices=SIZES)
ap.add_argument("--batch", type=int, default=8)
ap.add_argument("--seq", type=int, default=1024)
ap.add_argument("--decode-batches", default="1,64")
ap.add_argument("--prompt", type=int, default=512)
ap.add_argument("--new", type=int, default=128)
ap.add_argument("--skip", default="", help="comma-separated: compile-prefill, compile-decode, eager-decode")
ap.add_argument("--profile", type=int, default=0,
                help="N > 0: torch.profiler's kernel table of N prefill batches, eager and compiled (to stderr)")
a = ap.parse_args()
skip = set(a.skip.split(","))


def emit(**kv):
    print(json.dumps(kv), flush=True)


torch.manual_seed(0)
torch.set_default_dtype(torch.bfloat16)
config = transformers.LlamaConfig(**SIZES[a.size], rms_norm_eps=1e-5, tie_word_embeddings=False)
with torch.device("cuda"):
    model = transformers.LlamaForCausalLM(config).eval()
params = sum(p.numel() for p in model.parameters())
emit(what="parameters", parameters=params, transformers=transformers.__version__, torch=torch.__version__)


def timed(fn, iters):
    fn()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(iters):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t) / iters


ids = torch.randint(0, 32000, (a.batch, a.seq), device="cuda")
with torch.no_grad():
    for mode in ("eager", "compile"):
        if mode == "compile" and "compile-prefill" in skip:
            continue
        f = model if mode == "eager" else torch.compile(model)
        for keep in ((1, 0) if mode == "eager" else (1,)):
            try:
                for _ in range(2):
                    f(input_ids=ids, logits_to_keep=keep)
                s = timed(lambda: f(input_ids=ids, logits_to_keep=keep), 10)
                emit(what="prefill", mode=mode, logits="last" if keep == 1 else "all",
                     tokens_per_second=a.batch * a.seq / s, ms=s * 1e3)
                if a.profile > 0 and keep == 1:
                    import sys
                    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                                            torch.profiler.ProfilerActivity.CUDA]) as prof:
                        for _ in range(a.profile):
                            f(input_ids=ids, logits_to_keep=keep)
                        torch.cuda.synchronize()
                    print(f"\nprefill {mode}, {a.profile} batches:", file=sys.stderr)
                    print(prof.key_averages().table(sort_by="self_cuda_time_total", row_limit=15), file=sys.stderr,
                          flush=True)
            except Exception as e:  # a failing mode is a row saying so
                emit(what="prefill", mode=mode, error=str(e)[:300])

    for b in [int(x) for x in a.decode_batches.split(",")]:
        prompt = torch.randint(0, 32000, (b, a.prompt), device="cuda")
        mask = torch.ones_like(prompt)

        def gen(n, **kw):
            return model.generate(input_ids=prompt, attention_mask=mask, max_new_tokens=n, min_new_tokens=n,
                                  do_sample=False, **kw)

        runs = []
        if "eager-decode" not in skip:
            runs.append(("eager generate, dynamic cache", {}))
        if "compile-decode" not in skip:
            runs.append(("torch.compile generate, static cache", {"cache_implementation": "static"}))
        for label, kw in runs:
            try:
                # With cache_implementation="static", generate() compiles the decoding forward itself
                # (fullgraph, "reduce-overhead": CUDA graphs), Hugging Face's documented fast path.
                for _ in range(2):
                    gen(a.new, **kw)
                one = timed(lambda: gen(1, **kw), 3)
                full = timed(lambda: gen(a.new, **kw), 3)
                emit(what="decode", mode=label, batch=b, ttft_ms=one * 1e3, tpot_ms=(full - one) / (a.new - 1) * 1e3)
            except Exception as e:
                emit(what="decode", mode=label, batch=b, error=str(e)[:300])
