"""Test helper (Python with torch and Hugging Face transformers; the GPU machine has them): MODEL
(gpt2: GPT2LMHeadModel, bert: BertForMaskedLM, their default configs; llama: LlamaForCausalLM at
the small size of LLAMA_SMALL, grouped-query attention included; llama3: the same with Llama 3.2's
vocabulary, tied output layer and rope scaling; mixtral: MixtralForCausalLM with LLAMA_SMALL's
attention and 4 experts, 2 a token, in every layer) with random weights, in
eval mode, on a fixed batch. Writes OUT_DIR/MODEL.weights.pt (the whole state_dict as a plain dict,
tied copies lm_head.weight / cls.predictions.decoder.* included, as a user's file has them) and
OUT_DIR/MODEL.io.pt ({"input", "labels", "output" (logits), "loss"}). Where CUDA is, also the
first training step on the GPU without dropout, fp32 (TF32 off) and bf16 autocast: the loss,
the gradients' global norm and the logits, as OUT_DIR/MODEL.step.pt ({"loss_fp32",
"grad_norm_fp32", "loss_bf16", "grad_norm_bf16", "output_bf16"}).
Usage: hf_reference.py MODEL OUT_DIR"""
import sys

import torch
import transformers

name, out = sys.argv[1], sys.argv[2]
torch.manual_seed(13)
# models_test.cpp builds the same: hidden 256, intermediate 688, 4 layers, 8 heads, 2 key/value heads.
LLAMA_SMALL = dict(vocab_size=32000, hidden_size=256, intermediate_size=688, num_hidden_layers=4,
                   num_attention_heads=8, num_key_value_heads=2, max_position_embeddings=2048,
                   rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=False)
# models_test.cpp's llama3_small(): Llama 3.2's features at that size — its vocabulary, the output
# layer tied to the embedding, rope_theta 500000 with Llama 3.1's rope scaling.
LLAMA3_ROPE = dict(rope_type="llama3", factor=32.0, low_freq_factor=1.0, high_freq_factor=4.0,
                   original_max_position_embeddings=8192)
LLAMA3_SMALL = dict(LLAMA_SMALL, vocab_size=128256, max_position_embeddings=131072, tie_word_embeddings=True)
del LLAMA3_SMALL["rope_theta"]
if int(transformers.__version__.split(".")[0]) >= 5:  # transformers 5 holds rope_theta in rope_parameters
    LLAMA3_SMALL["rope_parameters"] = dict(LLAMA3_ROPE, rope_theta=500000.0)
else:
    LLAMA3_SMALL.update(rope_theta=500000.0, rope_scaling=LLAMA3_ROPE)
# models_test.cpp's mixtral_small(): LLAMA_SMALL with Mixtral's experts and its default rope_theta (1e6).
MIXTRAL_SMALL = dict(LLAMA_SMALL, num_local_experts=4, num_experts_per_tok=2)
del MIXTRAL_SMALL["rope_theta"]
if name in ("llama", "llama3", "mixtral"):
    if name == "mixtral":
        model = transformers.MixtralForCausalLM(transformers.MixtralConfig(**MIXTRAL_SMALL))
    else:
        model = transformers.LlamaForCausalLM(
            transformers.LlamaConfig(**(LLAMA_SMALL if name == "llama" else LLAMA3_SMALL)))
    if name == "llama3":
        rope = model.model.rotary_emb
        assert getattr(rope, "rope_type", "llama3") == "llama3", f"rope scaling not applied: {rope.rope_type}"
    with torch.no_grad():  # Hugging Face initialises the norms to ones: vary them, so they are tested
        for n, p in model.named_parameters():
            if "norm" in n:
                p.uniform_(0.5, 1.5)
    ids = torch.randint(0, model.config.vocab_size, (2, 64))
    labels = ids
elif name == "gpt2":
    model = transformers.GPT2LMHeadModel(transformers.GPT2Config())
    ids = torch.randint(0, 50257, (2, 64))
    labels = ids
else:
    model = transformers.BertForMaskedLM(transformers.BertConfig())
    ids = torch.randint(1000, 30522, (2, 64))
    labels = torch.full_like(ids, -100)
    labels[:, 5::7] = ids[:, 5::7]
    ids[:, 5::7] = 103  # [MASK]
model.eval()
with torch.no_grad():
    result = model(input_ids=ids, labels=labels)
torch.save(dict(model.state_dict()), f"{out}/{name}.weights.pt")
torch.save({"input": ids, "labels": labels, "output": result.logits, "loss": result.loss.reshape(1)}, f"{out}/{name}.io.pt")
if torch.cuda.is_available():
    torch.backends.cuda.matmul.allow_tf32 = False
    step = {}
    for precision in ("fp32", "bf16"):
        m = model.to("cuda")
        m.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=precision == "bf16"):
            result = m(input_ids=ids.cuda(), labels=labels.cuda())
        result.loss.backward()
        norm = torch.stack([p.grad.float().norm() for p in m.parameters() if p.grad is not None]).norm()
        step[f"loss_{precision}"] = result.loss.detach().float().cpu().reshape(1)
        step[f"grad_norm_{precision}"] = norm.cpu().reshape(1)
        if precision == "bf16":
            step["output_bf16"] = result.logits.detach().float().cpu()
    torch.save(step, f"{out}/{name}.step.pt")
print(transformers.__version__, sum(p.numel() for p in model.parameters()))
