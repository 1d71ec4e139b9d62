"""torchvision's side of bench/vision_train_vs_pytorch.sh: training throughput of resnet50,
vit_b_16 and mobilenet_v2 (bf16 autocast, eager and torch.compile), peak memory, and the
first-step loss and gradient norm from saved weights on the synthetic batch xpuperf builds.

The synthetic batch: xpuperf's SyntheticImageDataset with seed S draws a pool of 64 uint8 images
[64, H, W, 3] with torch.randint from a CPU generator seeded S; sample i is pool[i % 64] with
label i % classes. With 64 training samples and a batch of 64, xpuperf's first batch holds every
pool image once (shuffled): loss, batch-norm statistics and gradients do not depend on the order,
so the same images here in index order give the same first step.
Prints one JSON object per line."""
import argparse

import torch
import torch.nn.functional as F
import torchvision

from pytorch_common import emit, kernel_table, timed_steps

RECIPES = {  # the cases' _base.yaml: optimizer, label smoothing, channels-last
    "resnet50": dict(tv="resnet50", opt="sgd", lr=0.1, wd=1e-4, smoothing=0.1, channels_last=True),
    "vit": dict(tv="vit_b_16", opt="adamw", lr=0.0001875, wd=0.3, smoothing=0.11, channels_last=False),
    "mobilenetv2": dict(tv="mobilenet_v2", opt="sgd", lr=0.045, wd=4e-5, smoothing=0.0, channels_last=True),
}
MEAN = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1) * 255
STD = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1) * 255


def build(case, dropout_off=False):
    r = RECIPES[case]
    kwargs = {"dropout": 0.0} if dropout_off and case == "mobilenetv2" else {}
    return getattr(torchvision.models, r["tv"])(num_classes=1000, **kwargs)


def synthetic_pool(seed, size=224, n=64):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(256, (n, size, size, 3), generator=g, dtype=torch.uint8)


def normalize(images_nhwc_uint8, device, channels_last):
    x = images_nhwc_uint8.to(device).permute(0, 3, 1, 2)  # channels-last strides, as xpuperf's batches
    if not channels_last:
        x = x.contiguous()
    return (x.float() - MEAN.to(device)) / STD.to(device)


def optimizer(case, model):
    r = RECIPES[case]
    decay = [p for p in model.parameters() if p.dim() > 1 or case != "resnet50"]
    no_decay = [p for p in model.parameters() if p.dim() <= 1 and case == "resnet50"]
    groups = [{"params": decay, "weight_decay": r["wd"]}] + ([{"params": no_decay, "weight_decay": 0.0}] if no_decay else [])
    if r["opt"] == "sgd":
        return torch.optim.SGD(groups, lr=r["lr"], momentum=0.9, fused=True)
    return torch.optim.AdamW(groups, lr=r["lr"], fused=True)


def parity(case, out, seed, device):
    torch.manual_seed(seed)
    model = build(case, dropout_off=True)
    torch.save(dict(model.state_dict()), f"{out}/{case}_init.pt")
    model = model.to(device)
    r = RECIPES[case]
    if r["channels_last"]:
        model = model.to(memory_format=torch.channels_last)
    pool = synthetic_pool(seed)
    labels = (torch.arange(64) % 1000).to(device)
    for precision in ("fp32", "bf16"):
        m = build(case, dropout_off=True).to(device)
        m.load_state_dict(model.state_dict())
        if r["channels_last"]:
            m = m.to(memory_format=torch.channels_last)
        m.train()
        # LibTorch's defaults, which xpuperf keeps: TF32 in cuDNN's convolutions, not in matmuls.
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = True
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=precision == "bf16"):
            loss = F.cross_entropy(m(normalize(pool, device, r["channels_last"])), labels, label_smoothing=r["smoothing"])
        loss.backward()
        norm = torch.stack([p.grad.float().norm() for p in m.parameters()]).norm()
        emit(figure="parity", case=case, precision=precision, loss=loss.item(), grad_norm=norm.item())


def throughput(case, mode, batch, steps, warmup, device, profile=False):
    r = RECIPES[case]
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    model = build(case).to(device)
    if r["channels_last"]:
        model = model.to(memory_format=torch.channels_last)
    opt = optimizer(case, model)
    images = torch.randint(256, (batch, 224, 224, 3), dtype=torch.uint8, device=device)
    labels = torch.randint(1000, (batch,), device=device)

    def step():
        x = images.permute(0, 3, 1, 2)
        if not r["channels_last"]:
            x = x.contiguous()
        x = (x.float() - MEAN.to(device)) / STD.to(device)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = F.cross_entropy(model(x), labels, label_smoothing=r["smoothing"])
        loss.backward()
        if case == "vit":
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    run, seconds, peak_mib = timed_steps(step, mode, warmup, steps)
    emit(figure="throughput", case=case, mode=mode, images_per_s=batch * steps / seconds, peak_mib=peak_mib)
    if profile:
        kernel_table(case, mode, run)
    del model, opt
    torch.cuda.empty_cache()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", default="resnet50,vit,mobilenetv2")
    ap.add_argument("--out", required=True)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--modes", default="eager,compile")
    ap.add_argument("--profile", default="", help="cases whose kernels to list (comma-separated)")
    a = ap.parse_args()
    dev = torch.device("cuda")
    emit(figure="versions", torch=torch.__version__, torchvision=torchvision.__version__,
         gpu=torch.cuda.get_device_name())
    for c in a.cases.split(","):
        parity(c, a.out, a.seed, dev)
        for mode in a.modes.split(","):
            throughput(c, mode, a.batch, a.steps, 15 if mode == "compile" else 5, dev,
                       profile=c in a.profile.split(","))
