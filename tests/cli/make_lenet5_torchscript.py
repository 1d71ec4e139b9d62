"""Test helper (Debian's python3-torch): from a lenet5 checkpoint written by `xpuperf train`,
writes the same weights as a Python state_dict (dict.pth) and a TorchScript trace of a LeNet-5
defined in Python (ts.pt), so that xpuperf's weights loader and torchscript engine are checked
against a model xpuperf did not build. Usage: make_lenet5_torchscript.py CHECKPOINT OUT_DIR"""
import sys
import torch
import torch.nn.functional as F

checkpoint, out = sys.argv[1], sys.argv[2]
state = torch.jit.load(checkpoint).state_dict()


class LeNet5(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 6, 5, padding=2)
        self.conv2 = torch.nn.Conv2d(6, 16, 5)
        self.fc1, self.fc2, self.fc3 = torch.nn.Linear(400, 120), torch.nn.Linear(120, 84), torch.nn.Linear(84, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2).flatten(1)
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


model = LeNet5().eval()
model.load_state_dict(state)
torch.save(dict(model.state_dict()), f"{out}/dict.pth")
torch.save(model.state_dict(), f"{out}/ordered.pth")  # what LibTorch cannot read
torch.jit.save(torch.jit.trace(model, torch.randn(1, 1, 28, 28)), f"{out}/ts.pt")
