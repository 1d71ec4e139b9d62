"""The PyTorch side of bench/infer_vs_pytorch.sh: torchvision's resnet50 on one GPU, eager and
torch.compile, bf16, channels-last, timed like xpuperf's inference_core (inputs already on the
device, one synchronise per batch). Also writes the files xpuperf's engines load: the weights
(state_dict), a TorchScript trace and, with --aoti, an AOTInductor package. Prints JSON lines."""
import argparse, json, time
import torch, torchvision

p = argparse.ArgumentParser()
p.add_argument("--out", required=True)
p.add_argument("--batch", type=int, default=256)
p.add_argument("--batches", type=int, default=40)
p.add_argument("--queries", type=int, default=1000)
p.add_argument("--aoti", action="store_true")
a = p.parse_args()

torch.manual_seed(1234)
model = torchvision.models.resnet50().eval()
print(json.dumps({"figure": "parameters", "value": sum(t.numel() for t in model.parameters())}))
# BatchNorm statistics that are not the identity, so that folding them is tested.
with torch.no_grad():
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.uniform_(-0.1, 0.1); m.running_var.uniform_(0.5, 1.5)
            m.weight.uniform_(0.5, 1.5); m.bias.uniform_(-0.1, 0.1)
torch.save(dict(model.state_dict()), f"{a.out}/resnet50.pth")  # LibTorch cannot read OrderedDicts
torch.jit.save(torch.jit.trace(model, torch.randn(1, 3, 224, 224)), f"{a.out}/resnet50_ts.pt")

dev = torch.device("cuda")
model = model.to(dev, torch.bfloat16).to(memory_format=torch.channels_last)
x = torch.randn(a.batch, 3, 224, 224, device=dev, dtype=torch.bfloat16).contiguous(memory_format=torch.channels_last)


def throughput(fn, name):
    with torch.inference_mode():
        for _ in range(5):
            fn(x)
        torch.cuda.synchronize()
        core = 0.0
        for _ in range(a.batches):
            t = time.perf_counter()
            fn(x)
            torch.cuda.synchronize()
            core += time.perf_counter() - t
    print(json.dumps({"figure": name, "value": a.batch * a.batches / core}))


def latency(fn, name):
    one = x[:1].contiguous(memory_format=torch.channels_last)
    ms = []
    with torch.inference_mode():
        for _ in range(20):
            fn(one)
        torch.cuda.synchronize()
        for _ in range(a.queries):
            t = time.perf_counter()
            fn(one)
            torch.cuda.synchronize()
            ms.append((time.perf_counter() - t) * 1e3)
    ms.sort()
    for q in (50, 90, 99):
        print(json.dumps({"figure": f"{name}_p{q}_ms", "value": ms[min(len(ms) - 1, round(q / 100 * (len(ms) - 1)))]}))


throughput(model, "eager_bs%d" % a.batch)
latency(model, "eager_bs1")
compiled = torch.compile(model)
throughput(compiled, "compile_bs%d" % a.batch)
latency(compiled, "compile_bs1")

if a.aoti:
    batch = torch.export.Dim("batch", min=1, max=a.batch)
    with torch.no_grad():
        ep = torch.export.export(model, (x,), dynamic_shapes=({0: batch},))
        torch._inductor.aoti_compile_and_package(ep, package_path=f"{a.out}/resnet50.pt2")
