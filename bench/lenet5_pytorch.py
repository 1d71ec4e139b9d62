#!/usr/bin/python3
"""The reference for bench/lenet5_step_rate.sh: LeNet-5 training steps in Python PyTorch, the
same model, data, batch size, optimizer and threads as xpuperf's lenet5 case. Prints steps/s."""
import argparse
import gzip
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def read_idx(path):
    with gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


class LeNet5(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(400, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = x.flatten(1)
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data-dir", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--log-freq", type=int, default=100)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(1234)
    images = torch.from_numpy(read_idx(a.data_dir + "/train-images-idx3-ubyte.gz").copy()).float()
    images = images.div_(255.0).sub_(0.2860).div_(0.3530).unsqueeze(1)
    labels = torch.from_numpy(read_idx(a.data_dir + "/train-labels-idx1-ubyte.gz").copy()).long()
    model = LeNet5()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=0.0005)
    n = images.shape[0]
    perm = torch.randperm(n)
    start = time.perf_counter()
    pos = 0
    for step in range(1, a.steps + 1):
        if pos + a.batch > n:
            perm, pos = torch.randperm(n), 0
        idx = perm[pos:pos + a.batch]
        pos += a.batch
        x, y = images.index_select(0, idx), labels.index_select(0, idx)
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        if step % a.log_freq == 0:
            loss.item()
    elapsed = time.perf_counter() - start
    print(f"{a.steps / elapsed:.1f}")


if __name__ == "__main__":
    main()
