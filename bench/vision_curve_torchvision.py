"""torchvision's side of bench/vision_curve_vs_torchvision.sh: trains torchvision's model of a vision
case for a number of steps with the case's recipe as xpuperf merged it (`xpuperf config`: batch,
optimizer, learning rate and its schedule, warm-up, weight decay, label smoothing, clipping,
precision, image size, classes) on the same ImageNet-layout folder, and prints every step's loss.

The schedule is xpuperf's (src/xpuperf/train/lr_schedule.cpp, scheduled_lr): a linear warm-up to lr
over warmup_steps + warmup_epochs epochs, then cosine, linear or constant over max_steps (or
max_epochs), or lr × lr_gamma per epoch (exponential). Training crops are RandomResizedCrop with a
horizontal flip, normalised with ImageNet's mean and deviation, as xpuperf's loader makes them.
The weights start from torchvision's own initialisation, so the two curves are two draws of one
recipe, not one run: they are compared window by window, not step by step.

    python3 bench/vision_curve_torchvision.py CASE CONFIG_TEXT
    (CONFIG_TEXT: the output of `xpuperf config` for the run, whose max_steps is the steps to train;
    prints one JSON object)
"""
import contextlib
import json
import math
import os
import sys


def read_config(path):
    """`xpuperf config`'s `key: value   # source` lines as a dict of strings (quotes removed)."""
    values = {}
    with open(path) as f:
        for line in f:
            if line.startswith("#") or ":" not in line:
                continue
            key, rest = line.split(":", 1)
            value = rest.split(" #", 1)[0].strip()
            if len(value) >= 2 and value[0] == value[-1] == '"':
                value = value[1:-1]
            values[key.strip()] = value
    return values


def scheduled_lr(schedule, base_lr, step, warmup, total, steps_per_epoch, gamma):
    """xpuperf's scheduled_lr, step counted from 0."""
    if warmup > 0 and step < warmup:
        return base_lr * (step + 1) / warmup
    if schedule == "exponential":
        return base_lr if steps_per_epoch <= 0 else base_lr * gamma ** (step // steps_per_epoch)
    if schedule == "constant" or total <= warmup:
        return base_lr
    progress = min(1.0, (step - warmup) / (total - warmup))
    if schedule == "cosine":
        return base_lr * 0.5 * (1.0 + math.cos(math.pi * progress))
    if schedule == "linear":
        return base_lr * (1.0 - progress)
    raise SystemExit(f"vision_curve_torchvision.py: lr_scheduler '{schedule}' is not one xpuperf has")


def build_model(case, cfg, torchvision):
    classes = int(cfg["num_classes"])
    if case == "resnet50":
        return torchvision.models.resnet50(num_classes=classes)
    if case == "mobilenetv2":
        return torchvision.models.mobilenet_v2(num_classes=classes, dropout=float(cfg.get("dropout", 0.2)))
    if case == "vit":
        from torchvision.models.vision_transformer import VisionTransformer
        return VisionTransformer(image_size=int(cfg["image_size"]), patch_size=int(cfg["patch_size"]),
                                 num_layers=int(cfg["num_layers"]), num_heads=int(cfg["num_heads"]),
                                 hidden_dim=int(cfg["hidden_dim"]), mlp_dim=int(cfg["mlp_dim"]), num_classes=classes)
    raise SystemExit(f"vision_curve_torchvision.py: no torchvision model for case '{case}' "
                     "(resnet50, mobilenetv2, vit)")


def main():
    if len(sys.argv) != 3:
        raise SystemExit("usage: vision_curve_torchvision.py CASE CONFIG_TEXT (the output of `xpuperf config`)")
    case, config_path = sys.argv[1], sys.argv[2]
    import torch
    import torchvision
    from torchvision import transforms

    cfg = read_config(config_path)
    steps = int(cfg.get("max_steps", 0))
    if steps <= 0:
        raise SystemExit(f"vision_curve_torchvision.py: {config_path} sets no max_steps: the steps to train")
    seed = int(cfg["seed"])
    torch.manual_seed(seed)
    if int(cfg.get("num_threads", 0)) > 0:
        torch.set_num_threads(int(cfg["num_threads"]))
    device = cfg.get("device", "auto")
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    precision = cfg.get("precision", "fp32")
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = precision == "tf32"

    size = int(cfg["image_size"])
    crops = transforms.Compose([transforms.RandomResizedCrop(size), transforms.RandomHorizontalFlip(),
                                transforms.ToTensor(),
                                transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
    folder = os.path.join(cfg["data_dir"], cfg.get("train_data", "train"))
    images = torchvision.datasets.ImageFolder(folder, crops)
    batch = int(cfg["train_batch_size"])
    loader = torch.utils.data.DataLoader(images, batch_size=batch, shuffle=True, drop_last=True, num_workers=2,
                                         generator=torch.Generator().manual_seed(seed))
    steps_per_epoch = len(loader)
    if steps_per_epoch == 0:
        raise SystemExit(f"vision_curve_torchvision.py: {folder} has fewer images ({len(images)}) than a batch ({batch})")

    model = build_model(case, cfg, torchvision).to(device)
    decay, no_decay = [], []
    skip_1d = cfg.get("weight_decay_skip_1d", "false") == "true"
    for p in model.parameters():
        (no_decay if skip_1d and p.ndim <= 1 else decay).append(p)
    groups = [{"params": decay, "weight_decay": float(cfg["weight_decay"])}, {"params": no_decay, "weight_decay": 0.0}]
    lr = float(cfg["lr"])
    if cfg["optimizer"] == "sgd":
        optimizer = torch.optim.SGD(groups, lr=lr, momentum=float(cfg.get("momentum", 0.0)))
    elif cfg["optimizer"] == "adamw":
        optimizer = torch.optim.AdamW(groups, lr=lr, betas=(float(cfg["adam_beta1"]), float(cfg["adam_beta2"])),
                                      eps=float(cfg["adam_eps"]))
    else:
        raise SystemExit(f"vision_curve_torchvision.py: optimizer '{cfg['optimizer']}' is not sgd or adamw")
    criterion = torch.nn.CrossEntropyLoss(label_smoothing=float(cfg.get("label_smoothing", 0.0)))
    clip = float(cfg.get("clip_grad_norm", 0))
    warmup = int(cfg.get("warmup_steps", 0)) + int(cfg.get("warmup_epochs", 0)) * steps_per_epoch
    total = steps  # xpuperf schedules over max_steps when it is set
    autocast = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)
    scaler = torch.cuda.amp.GradScaler() if precision == "fp16" else None

    losses = []
    batches = iter(loader)
    model.train()
    for step in range(steps):
        for g in optimizer.param_groups:
            g["lr"] = scheduled_lr(cfg["lr_scheduler"], lr, step, warmup, total, steps_per_epoch,
                                   float(cfg.get("lr_gamma", 1.0)))
        try:
            x, y = next(batches)
        except StopIteration:
            batches = iter(loader)
            x, y = next(batches)
        x, y = x.to(device), y.to(device)
        with torch.autocast(device_type=device, dtype=autocast) if autocast else contextlib.nullcontext():
            loss = criterion(model(x), y)
        optimizer.zero_grad(set_to_none=True)
        if scaler:
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
        else:
            loss.backward()
        if clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        if scaler:
            scaler.step(optimizer)
            scaler.update()
        else:
            optimizer.step()
        losses.append(loss.detach().float())  # read back once at the end: no wait for the GPU a step
    print(json.dumps({"loss_curve": torch.stack(losses).tolist(), "torch": torch.__version__, "torchvision": torchvision.__version__,
                      "device": device}))


if __name__ == "__main__":
    main()
