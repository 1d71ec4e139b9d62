"""Whether Hugging Face PEFT reads the LoRA adapters that xpuperf saved (`save_checkpoint` with
`lora_rank`): builds Hugging Face's LlamaForCausalLM at the sizes given, loads the folder with
PeftModel.from_pretrained, and checks that every tensor of adapter_model.safetensors is in the model under
its name, equal, that the model has no adapter the file lacks, and that adapter_config.json's rank,
alpha and targets are the ones PEFT took. Prints one JSON line; exits 1 when anything differs.
Usage: python3 bench/peft_reads_adapters.py DIR --hidden 64 --intermediate 128 --layers 2 --heads 4 --kv-heads 2"""
import argparse
import json
import sys

import peft
import safetensors.torch
import torch
import transformers


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--vocab", type=int, default=128256)
    ap.add_argument("--hidden", type=int, required=True)
    ap.add_argument("--intermediate", type=int, required=True)
    ap.add_argument("--layers", type=int, required=True)
    ap.add_argument("--heads", type=int, required=True)
    ap.add_argument("--kv-heads", type=int, required=True)
    a = ap.parse_args()
    base = transformers.LlamaForCausalLM(transformers.LlamaConfig(
        vocab_size=a.vocab, hidden_size=a.hidden, intermediate_size=a.intermediate, num_hidden_layers=a.layers,
        num_attention_heads=a.heads, num_key_value_heads=a.kv_heads))
    model = peft.PeftModel.from_pretrained(base, a.dir)
    saved = safetensors.torch.load_file(f"{a.dir}/adapter_model.safetensors")
    config = json.load(open(f"{a.dir}/adapter_config.json"))
    state = {k: v for k, v in model.state_dict().items() if ".lora_" in k}
    problems = []
    loaded = set()
    for name, tensor in saved.items():
        # PEFT's file leaves out the adapter's name, which the model's parameters carry ("default").
        key = name.replace(".lora_A.weight", ".lora_A.default.weight").replace(".lora_B.weight", ".lora_B.default.weight")
        if key not in state:
            problems.append(f"{name}: not in PEFT's model")
        elif not torch.equal(state[key].to(tensor.dtype), tensor):
            problems.append(f"{name}: PEFT's model holds other values")
        loaded.add(key)
    problems += [f"{k}: in PEFT's model, not in the file" for k in state if k not in loaded]
    taken = model.peft_config["default"]
    if taken.r != config["r"] or taken.lora_alpha != config["lora_alpha"]:
        problems.append(f"rank/alpha: PEFT took {taken.r}/{taken.lora_alpha}, the file says {config['r']}/{config['lora_alpha']}")
    if set(taken.target_modules) != set(config["target_modules"]):
        problems.append(f"targets: PEFT took {sorted(taken.target_modules)}, the file says {config['target_modules']}")
    nonzero_b = sum(1 for k, v in saved.items() if ".lora_B." in k and v.abs().sum() > 0)
    print(json.dumps(dict(figure="peft_reads_adapters", peft=peft.__version__, tensors=len(saved),
                          trained_b_nonzero=nonzero_b, problems=problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
