#!/usr/bin/env python3
"""Where a profiled stretch of training waits: reads the Chrome trace that `profile_steps` writes
with XPUPERF_PROFILE_TRACE=FILE (LibTorch's Kineto profiler) and prints
- each stream's device time (kernels, copies, fills) and its longest kernels;
- the step's stream (the busiest): how much of the stretch it was busy, its idle gaps;
- for every other stream, the share of its device work that ran while the step's stream was busy
  (beside the step) rather than in the step's gaps (held back until the step's stream idled);
- the host's CUDA calls by thread, longest in total first (a thread blocked in a synchronisation
  shows here).
Usage: bench/trace_streams.py TRACE.json [--gap-ms 1] [--top 5]"""
import argparse
import bisect
import collections
import json
import sys

DEVICE = ("kernel", "gpu_memcpy", "gpu_memset")
HOST = ("cuda_runtime", "cuda_driver")


def load(path):
    """The trace's (device events, host CUDA calls)."""
    with open(path) as f:
        return load_events(json.load(f)["traceEvents"])


def load_events(events):
    """The complete events ("X") with a duration: (device events, host CUDA calls)."""
    complete = [e for e in events if e.get("ph") == "X" and "dur" in e]
    return ([e for e in complete if e.get("cat") in DEVICE], [e for e in complete if e.get("cat") in HOST])


def stream_of(event):
    return event.get("args", {}).get("stream", -1)


def merged(intervals):
    """The union of [start, end) intervals, sorted and merged."""
    out = []
    for a, b in sorted(intervals):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def overlap(a, b, busy, starts):
    """How much of [a, b) falls inside the merged intervals `busy` (starts: their start times)."""
    total = 0.0
    i = max(0, bisect.bisect_right(starts, a) - 1)
    while i < len(busy) and busy[i][0] < b:
        total += max(0.0, min(b, busy[i][1]) - max(a, busy[i][0]))
        i += 1
    return total


def analyse(device, host, gap_us=1000.0, top=5):
    """The figures the report prints, as a dict (times in microseconds, as the trace has them)."""
    if not device:
        return {"error": "no device events in the trace (a CPU run, or a LibTorch without CUDA profiling)"}
    start = min(e["ts"] for e in device)
    end = max(e["ts"] + e["dur"] for e in device)
    span = end - start
    by_stream = collections.defaultdict(list)
    for e in device:
        by_stream[stream_of(e)].append(e)
    streams = []
    for s, events in by_stream.items():
        busy = sum(b - a for a, b in merged((e["ts"], e["ts"] + e["dur"]) for e in events))
        names = collections.Counter()
        for e in events:
            names[e["name"]] += e["dur"]
        streams.append({"stream": s, "events": len(events), "busy_us": busy, "top": names.most_common(top)})
    streams.sort(key=lambda x: -x["busy_us"])
    step = streams[0]["stream"]
    busy = merged((e["ts"], e["ts"] + e["dur"]) for e in by_stream[step])
    starts = [a for a, _ in busy]
    gaps = [(b2 - a1, a1 - start) for (_, a1), (b2, _) in zip(busy, busy[1:])]
    long_gaps = sorted((g for g in gaps if g[0] >= gap_us), reverse=True)
    all_work = all_beside = 0.0
    for s in streams[1:]:
        work = sum(e["dur"] for e in by_stream[s["stream"]])
        beside = sum(overlap(e["ts"], e["ts"] + e["dur"], busy, starts) for e in by_stream[s["stream"]])
        s["beside_step_share"] = beside / work if work > 0 else 0.0
        all_work += work
        all_beside += beside
    calls = collections.defaultdict(lambda: [0, 0.0, 0.0])
    for e in host:
        c = calls[(e.get("tid"), e["name"])]
        c[0] += 1
        c[1] += e["dur"]
        c[2] = max(c[2], e["dur"])
    return {
        "span_us": span,
        "step_stream": step,
        "step_busy_share": streams[0]["busy_us"] / span if span > 0 else 0.0,
        "step_idle_us": span - streams[0]["busy_us"],
        "long_gaps": long_gaps,
        "streams": streams,
        "others_beside_step_share": all_beside / all_work if all_work > 0 else None,
        "host_calls": sorted(([tid, name, n, total, most] for (tid, name), (n, total, most) in calls.items()),
                             key=lambda c: -c[3]),
    }


def report(a, top=5, out=sys.stdout):
    if "error" in a:
        print(a["error"], file=out)
        return
    ms = 1e-3
    print(f"device events over {a['span_us'] * ms:.1f} ms", file=out)
    print(f"the step's stream ({a['step_stream']}): busy {a['step_busy_share'] * 100:.1f} %, idle "
          f"{a['step_idle_us'] * ms:.1f} ms; {len(a['long_gaps'])} gaps of a millisecond or more, "
          f"{sum(g for g, _ in a['long_gaps']) * ms:.1f} ms", file=out)
    for g, at in a["long_gaps"][:top]:
        print(f"    gap {g * ms:8.2f} ms at {at * ms:8.1f} ms", file=out)
    if a["others_beside_step_share"] is not None:
        print(f"the other {len(a['streams']) - 1} streams: {a['others_beside_step_share'] * 100:.1f} % of their device "
              "time ran while the step's stream was busy, the rest in its gaps", file=out)
    print("\n| stream | events | busy ms | share of the stretch | of its work beside the step |", file=out)
    print("| --- | ---: | ---: | ---: | ---: |", file=out)
    for s in a["streams"][:2 * top]:
        beside = f"{s['beside_step_share'] * 100:.0f} %" if "beside_step_share" in s else "(the step's)"
        print(f"| {s['stream']} | {s['events']} | {s['busy_us'] * ms:.1f} | "
              f"{s['busy_us'] / a['span_us'] * 100:.1f} % | {beside} |", file=out)
    for s in a["streams"][:top]:
        print(f"\nstream {s['stream']}, longest in total:", file=out)
        for name, d in s["top"]:
            print(f"    {d * ms:9.2f} ms  {name[:100]}", file=out)
    print("\n| thread | CUDA call | calls | total ms | longest ms |", file=out)
    print("| --- | --- | ---: | ---: | ---: |", file=out)
    for tid, name, n, total, most in a["host_calls"][:4 * top]:
        print(f"| {tid} | {name} | {n} | {total * ms:.2f} | {most * ms:.2f} |", file=out)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("trace")
    p.add_argument("--gap-ms", type=float, default=1.0, help="idle gaps listed from this length on")
    p.add_argument("--top", type=int, default=5)
    o = p.parse_args()
    try:
        device, host = load(o.trace)
    except (OSError, ValueError, KeyError) as e:
        sys.exit(f"trace_streams.py: cannot read {o.trace} as a Chrome trace: {e}")
    a = analyse(device, host, o.gap_ms * 1000.0, o.top)
    report(a, o.top)
    return 1 if "error" in a else 0


if __name__ == "__main__":
    sys.exit(main())
