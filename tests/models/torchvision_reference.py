"""Test helper (Debian's python3-torch and python3-torchvision): torchvision's MODEL with random
weights and batch-norm statistics that are not the identity, in eval mode, run on a fixed batch.
Writes OUT_DIR/MODEL.weights.pt (the state_dict as a plain dict, as a user saves one) and
OUT_DIR/MODEL.io.pt ({"input": ..., "output": ...}).
Usage: torchvision_reference.py MODEL OUT_DIR"""
import sys

import torch
import torchvision

name, out = sys.argv[1], sys.argv[2]
torch.manual_seed(11)
model = getattr(torchvision.models, name)()
with torch.no_grad():
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.uniform_(-0.1, 0.1)
            m.running_var.uniform_(0.5, 1.5)
            m.weight.uniform_(0.5, 1.5)
            m.bias.uniform_(-0.1, 0.1)
    for p in model.parameters():
        if p.abs().sum() == 0:  # ViT's zero head and class token: give them values to check
            p.normal_(0, 0.02)
model.eval()
x = torch.randn(2, 3, 224, 224)
with torch.no_grad():
    y = model(x)
torch.save(dict(model.state_dict()), f"{out}/{name}.weights.pt")
torch.save({"input": x, "output": y}, f"{out}/{name}.io.pt")
print(sum(p.numel() for p in model.parameters()))
