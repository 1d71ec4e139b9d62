"""Test helper (Debian's python3-torch, no torchvision): writes a state_dict with torchvision
resnet50's names and shapes, random weights and batch-norm statistics that are not the identity
(so that folding them is tested). Usage: make_resnet50_state_dict.py OUT_FILE"""
import sys
import torch

torch.manual_seed(7)
sd = {}


def conv(name, out, inp, k):
    sd[f"{name}.weight"] = torch.randn(out, inp, k, k) * (2.0 / (out * k * k)) ** 0.5


def bn(name, c):
    sd[f"{name}.weight"] = torch.empty(c).uniform_(0.5, 1.5)
    sd[f"{name}.bias"] = torch.empty(c).uniform_(-0.1, 0.1)
    sd[f"{name}.running_mean"] = torch.empty(c).uniform_(-0.1, 0.1)
    sd[f"{name}.running_var"] = torch.empty(c).uniform_(0.5, 1.5)
    sd[f"{name}.num_batches_tracked"] = torch.tensor(100)


conv("conv1", 64, 3, 7)
bn("bn1", 64)
inp = 64
for l, (width, blocks) in enumerate([(64, 3), (128, 4), (256, 6), (512, 3)]):
    for b in range(blocks):
        p = f"layer{l + 1}.{b}"
        conv(f"{p}.conv1", width, inp, 1); bn(f"{p}.bn1", width)
        conv(f"{p}.conv2", width, width, 3); bn(f"{p}.bn2", width)
        conv(f"{p}.conv3", width * 4, width, 1); bn(f"{p}.bn3", width * 4)
        if b == 0:
            conv(f"{p}.downsample.0", width * 4, inp, 1); bn(f"{p}.downsample.1", width * 4)
        inp = width * 4
sd["fc.weight"] = torch.randn(1000, 2048) * 0.01
sd["fc.bias"] = torch.zeros(1000)
print(sum(v.numel() for k, v in sd.items() if "running" not in k and "num_batches" not in k))
torch.save(sd, sys.argv[1])
