"""bench/trace_streams.py: the step's stream's busy share and gaps, the other streams' work beside
the step or in its gaps, and the host's CUDA calls, from a made-up Chrome trace of Kineto's form."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))
import trace_streams as ts  # noqa: E402

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "bench", "trace_streams.py")


def kernel(name, stream, start, dur, cat="kernel"):
    return {"ph": "X", "cat": cat, "name": name, "ts": start, "dur": dur, "args": {"stream": stream}}


def call(name, tid, start, dur):
    return {"ph": "X", "cat": "cuda_runtime", "name": name, "ts": start, "dur": dur, "tid": tid}


# The step's stream 7: busy 0-1000, 1000-2000 (touching), 4000-5000 (a gap of 2000), 5000-5500
# overlapping kernels merged. Stream 9 (a decoder's): 300 µs beside the step, 1000 µs in its gap.
TRACE = {"traceEvents": [
    kernel("gemm", 7, 1000, 1000), kernel("gemm", 7, 0, 1000), kernel("norm", 7, 4000, 1000),
    kernel("norm", 7, 4900, 600),
    kernel("rgba2rgb", 9, 500, 300), kernel("Memcpy HtoD (Pageable -> Device)", 9, 2500, 1000, "gpu_memcpy"),
    call("cudaEventSynchronize", 11, 100, 700), call("cudaEventSynchronize", 11, 2000, 1500),
    call("cudaLaunchKernel", 12, 0, 5), {"ph": "i", "name": "an instant, no duration", "ts": 10},
]}


class TraceStreams(unittest.TestCase):
    def test_the_steps_stream_its_gaps_and_the_work_beside_it(self):
        device, host = ts.load_events(TRACE["traceEvents"])
        a = ts.analyse(device, host, gap_us=1000.0)
        self.assertEqual(a["span_us"], 5500)
        self.assertEqual(a["step_stream"], 7)
        self.assertAlmostEqual(a["step_busy_share"], 3500 / 5500)
        self.assertEqual(a["long_gaps"], [(2000, 2000)])
        other = a["streams"][1]
        self.assertEqual(other["stream"], 9)
        self.assertAlmostEqual(other["beside_step_share"], 300 / 1300)
        self.assertAlmostEqual(a["others_beside_step_share"], 300 / 1300)
        self.assertEqual(a["host_calls"][0], [11, "cudaEventSynchronize", 2, 2200, 1500])

    def test_the_script_prints_the_tables_and_fails_without_device_events(self):
        with tempfile.TemporaryDirectory() as d:
            good, empty, broken = (os.path.join(d, n) for n in ("good.json", "empty.json", "broken.json"))
            json.dump(TRACE, open(good, "w"))
            json.dump({"traceEvents": [call("cudaLaunchKernel", 1, 0, 5)]}, open(empty, "w"))
            open(broken, "w").write("not json")
            out = subprocess.run([sys.executable, SCRIPT, good], capture_output=True, text=True)
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertIn("the step's stream (7): busy 63.6 %", out.stdout)
            self.assertIn("gap     2.00 ms at      2.0 ms", out.stdout)
            self.assertIn("23.1 % of their device time ran while the step's stream was busy", out.stdout)
            self.assertIn("| 11 | cudaEventSynchronize | 2 | 2.20 | 1.50 |", out.stdout)
            out = subprocess.run([sys.executable, SCRIPT, empty], capture_output=True, text=True)
            self.assertEqual(out.returncode, 1)
            self.assertIn("no device events", out.stdout)
            out = subprocess.run([sys.executable, SCRIPT, broken], capture_output=True, text=True)
            self.assertNotEqual(out.returncode, 0)
            self.assertIn("cannot read", out.stderr)


if __name__ == "__main__":
    unittest.main()
