"""What the bench scripts read from an xpuperf run's output: its PerfLog events, rank 0's where several
ranks print (each line prefixed `[rank k] `)."""
import json


def events(path):
    """(steps, finished, evaluations): the STEP_END values in order, FINISHED's value ({} without one)
    and the EVALUATE values in order."""
    steps, finished, evaluations = [], {}, []
    for line in open(path):
        if "[PerfLog]" not in line or (line.startswith("[rank ") and not line.startswith("[rank 0]")):
            continue
        e = json.loads(line[line.index("{"):])
        if e["event"] == "STEP_END":
            steps.append(e["value"])
        elif e["event"] == "FINISHED":
            finished = e["value"]
        elif e["event"] == "EVALUATE":
            evaluations.append(e["value"])
    return steps, finished, evaluations


def steady(steps, key, skip=1):
    """The mean of `key` over the STEP_ENDs after the first `skip` (the first holds the warm-up); 0 without
    them."""
    values = [s.get(key, 0) for s in steps[skip:]]
    return sum(values) / len(values) if values else 0
