"""Whether a training case's loss curve with its fused kernels overlaps the curve without them within
the noise of the seeds (the speed issue's check): reads the runs' outputs that bench/kernel_curves.sh
wrote (FINISHED's `loss_curve`: every step's loss, `record_loss_curve`) and prints a Markdown table.

Each curve is averaged over windows of WINDOW steps (one step's loss is one batch's and noisy). In a
window, the seeds' spread is the widest gap between two seeds' means under one setting (kernels on,
or off), and the kernels' gap is the distance between the two settings' means over the seeds. The
curves overlap when the kernels' gap, averaged over the windows, is no wider than the seeds' spread
averaged the same way, and no more than half the windows have their gap outside their spread. A
single window is not the verdict: with two seeds its spread is one difference, which can come out
near zero by chance (with no difference between the settings, a window's gap is outside its spread
about one time in five with two seeds, one in twenty with three; more than five windows of ten
outside, about one time in a hundred with two seeds). When the averages agree but most windows do
not, the verdict is unclear: a steady offset late in training that a wide early spread averages
away looks like that, and so does chance; more seeds tell them apart.

    python3 bench/kernel_curves.py --window 20 [--data CASE=TEXT ...] CASE:SETTING:SEED:LOG ...
    (SETTING: on or off; --data: what the case trained on, printed under its heading)
"""
import argparse
import json
import math
import sys

from perflog import events


def loss_curve(path):
    """Every step's loss in the run's FINISHED (`loss_curve`), or [] when the run recorded none."""
    _, finished, _ = events(path)
    return [float(v) for v in finished.get("loss_curve", [])]


def window_means(curve, width):
    """The mean of each whole window of `width` steps."""
    return [sum(curve[i:i + width]) / width for i in range(0, len(curve) - width + 1, width)]


def compare(curves, width):
    """curves: {(setting, seed): [loss per step]} with settings 'on' and 'off', each with two seeds or
    more. Returns (rows, summary): a row a window (first step, each setting's mean over the seeds,
    the kernels' gap, the seeds' spread, whether the gap is within it) and the summary of the windows."""
    means = {key: window_means(curve, width) for key, curve in curves.items()}
    windows = min(len(m) for m in means.values()) if means else 0
    rows = []
    for w in range(windows):
        by_setting = {}
        spread = 0.0
        for setting in ("on", "off"):
            values = [m[w] for (s, _), m in means.items() if s == setting]
            by_setting[setting] = sum(values) / len(values)
            spread = max(spread, max(values) - min(values))
        gap = abs(by_setting["on"] - by_setting["off"])
        rows.append({"first_step": w * width + 1, "on": by_setting["on"], "off": by_setting["off"], "gap": gap,
                     "spread": spread, "within": gap <= spread})
    within = sum(r["within"] for r in rows)
    mean_gap = sum(r["gap"] for r in rows) / len(rows) if rows else math.nan
    mean_spread = sum(r["spread"] for r in rows) / len(rows) if rows else math.nan
    if not rows or mean_gap > mean_spread:
        verdict = "no"
    elif 2 * (len(rows) - within) > len(rows):
        verdict = "unclear"
    else:
        verdict = "yes"
    summary = {"windows": len(rows), "within": within, "mean_gap": mean_gap, "mean_spread": mean_spread,
               "verdict": verdict, "overlap": verdict == "yes",
               "largest_gap": max((r["gap"] for r in rows), default=math.nan),
               "largest_spread": max((r["spread"] for r in rows), default=math.nan)}
    return rows, summary


def verdict_text(summary):
    if summary["verdict"] != "unclear":
        return summary["verdict"]
    outside = summary["windows"] - summary["within"]
    return f"unclear: {outside} of {summary['windows']} windows outside the spread; run more SEEDS"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--window", type=int, default=20)
    parser.add_argument("--data", action="append", default=[], help="CASE=what it trained on")
    parser.add_argument("runs", nargs="+", help="CASE:SETTING:SEED:LOG")
    args = parser.parse_args()
    data = dict(d.split("=", 1) for d in args.data if "=" in d)
    if args.window < 1:
        sys.exit("kernel_curves.py: --window must be 1 or more")
    cases = {}
    failed = []
    for run in args.runs:
        case, setting, seed, path = run.split(":", 3)
        if setting not in ("on", "off"):
            sys.exit(f"kernel_curves.py: the setting of {run} is not on or off")
        curve = loss_curve(path)
        if not curve:
            failed.append(f"{case} kernels {setting} seed {seed}")
            continue
        cases.setdefault(case, {})[(setting, seed)] = curve
    verdicts = []
    for case, curves in cases.items():
        seeds = {s: sorted(seed for (k, seed) in curves if k == s) for s in ("on", "off")}
        if min(len(v) for v in seeds.values()) < 2:
            failed.append(f"{case}: fewer than two seeds' curves under one setting ({json.dumps(seeds)})")
            continue
        rows, summary = compare(curves, args.window)
        steps = min(len(c) for c in curves.values())
        print(f"\n### {case}: {steps} steps, seeds {', '.join(seeds['on'])}, loss averaged over windows of "
              f"{args.window} steps\n")
        if case in data:
            print(f"Data: {data[case]}.\n")
        print("| steps | kernels on (mean of the seeds) | kernels off | kernels' gap | seeds' spread | within |")
        print("| --- | ---: | ---: | ---: | ---: | --- |")
        for r in rows:
            last = r["first_step"] + args.window - 1
            print(f"| {r['first_step']}–{last} | {r['on']:.4f} | {r['off']:.4f} | {r['gap']:.4f} | "
                  f"{r['spread']:.4f} | {'yes' if r['within'] else 'no'} |")
        verdicts.append((case, summary))
    if verdicts:
        print("\n| case | kernels' gap, mean of the windows | seeds' spread, mean | windows within the spread | "
              "largest gap / spread | curves overlap |")
        print("| --- | ---: | ---: | ---: | ---: | --- |")
        for case, s in verdicts:
            print(f"| {case} | {s['mean_gap']:.4f} | {s['mean_spread']:.4f} | {s['within']} of {s['windows']} | "
                  f"{s['largest_gap']:.4f} / {s['largest_spread']:.4f} | {verdict_text(s)} |")
    if failed:
        print("kernel_curves.py: no loss curve from: " + "; ".join(failed), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
