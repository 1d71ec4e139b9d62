"""The serving sweep's reference (bench/llm_serving_vs_hf.sh): Hugging Face's LlamaForCausalLM with
random bf16 weights on the GPU, generate() with a static cache (its forward compiled by
generate() itself: fullgraph, CUDA graphs), greedy, at each concurrency as one static batch of
that many INPUT-token prompts, each generating exactly OUTPUT tokens. Output tokens/s = batch x
OUTPUT / the generate() call's time (the prefill included, as a served query's is).
One JSON line a point, printed as each ends (a failing point, e.g. out of memory, says why).
Usage: llm_serving_hf.py --size 8b|1b --lengths 1024x1024,8192x1024 --concurrency 1,2,4,...,64"""
import argparse
import time

import torch
import transformers

from pytorch_common import emit

SIZES = {
    "8b": dict(vocab_size=128256, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
               num_attention_heads=32, num_key_value_heads=8, max_position_embeddings=131072, rope_theta=500000.0),
    "1b": dict(vocab_size=32000, hidden_size=2048, intermediate_size=5632, num_hidden_layers=22,
               num_attention_heads=32, num_key_value_heads=4, max_position_embeddings=2048),
}

ap = argparse.ArgumentParser()
ap.add_argument("--size", default="8b", choices=SIZES)
ap.add_argument("--lengths", default="1024x1024")
ap.add_argument("--concurrency", default="1,2,4,8,16,32,64")
a = ap.parse_args()


torch.manual_seed(0)
torch.set_default_dtype(torch.bfloat16)
config = transformers.LlamaConfig(**SIZES[a.size], rms_norm_eps=1e-5, tie_word_embeddings=False)
with torch.device("cuda"):
    model = transformers.LlamaForCausalLM(config).eval()
emit(what="parameters", parameters=sum(p.numel() for p in model.parameters()), torch=torch.__version__,
     transformers=transformers.__version__)

with torch.no_grad():
    for pair in a.lengths.split(","):
        inp, out = (int(x) for x in pair.split("x"))
        for c in (int(x) for x in a.concurrency.split(",")):
            try:
                prompt = torch.randint(0, config.vocab_size, (c, inp), device="cuda")
                mask = torch.ones_like(prompt)

                def gen():
                    return model.generate(input_ids=prompt, attention_mask=mask, max_new_tokens=out,
                                          min_new_tokens=out, do_sample=False, cache_implementation="static")

                gen()  # compiles for this batch and length
                torch.cuda.synchronize()
                t = time.perf_counter()
                gen()
                torch.cuda.synchronize()
                s = time.perf_counter() - t
                emit(what="point", input_tokens=inp, output_tokens=out, concurrency=c,
                     output_tokens_per_second=c * out / s, seconds=s)
            except Exception as e:  # noqa: BLE001 - a failing point is a row saying why
                emit(what="point", input_tokens=inp, output_tokens=out, concurrency=c, error=str(e)[:300])
            torch.cuda.empty_cache()
