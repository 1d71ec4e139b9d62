"""Test helper (Python with torch and Hugging Face transformers; the GPU machine has them): MODEL
(gpt2: GPT2LMHeadModel, bert: BertForMaskedLM, their default configs) with random weights, in
eval mode, on a fixed batch. Writes OUT_DIR/MODEL.weights.pt (the whole state_dict as a plain dict,
tied copies lm_head.weight / cls.predictions.decoder.* included, as a user's file has them) and
OUT_DIR/MODEL.io.pt ({"input", "labels", "output" (logits), "loss"}).
Usage: hf_reference.py MODEL OUT_DIR"""
import sys

import torch
import transformers

name, out = sys.argv[1], sys.argv[2]
torch.manual_seed(13)
if name == "gpt2":
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
print(transformers.__version__, sum(p.numel() for p in model.parameters()))
