"""bench/kernel_curves.py: the windows' means, the kernels' gap against the seeds' spread, and the
verdict, on curves whose answer is known; and a run without a curve is named and fails the table."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))
import kernel_curves as kcurves  # noqa: E402


def finished_log(directory, name, curve):
    path = os.path.join(directory, name)
    with open(path, "w") as f:
        f.write("some start-up line\n")
        if curve is not None:
            value = {"steady_samples_per_second": 1.0, "loss_curve": curve}
            f.write('[PerfLog] {"event":"FINISHED","metadata":{},"value":' + json.dumps(value) + "}\n")
    return path


class KernelCurves(unittest.TestCase):
    def test_window_means_keep_whole_windows_only(self):
        self.assertEqual(kcurves.window_means([1, 3, 5, 7, 9], 2), [2.0, 6.0])
        self.assertEqual(kcurves.window_means([1, 2], 3), [])

    def test_a_gap_within_the_seeds_spread_overlaps(self):
        # Two windows of 2 steps. Seeds differ by 0.2 (off) and 0.1 (on); the settings' means by 0.05.
        curves = {("off", "1"): [4.0, 4.0, 3.0, 3.0], ("off", "2"): [4.2, 4.2, 3.2, 3.2],
                  ("on", "1"): [4.1, 4.1, 3.1, 3.1], ("on", "2"): [4.2, 4.2, 3.2, 3.2]}
        rows, summary = kcurves.compare(curves, 2)
        self.assertEqual([r["first_step"] for r in rows], [1, 3])
        self.assertAlmostEqual(rows[0]["on"], 4.15)
        self.assertAlmostEqual(rows[0]["off"], 4.1)
        self.assertAlmostEqual(rows[0]["gap"], 0.05)
        self.assertAlmostEqual(rows[0]["spread"], 0.2)
        self.assertTrue(summary["overlap"])
        self.assertEqual((summary["within"], summary["windows"]), (2, 2))
        self.assertAlmostEqual(summary["mean_gap"], 0.05)
        self.assertAlmostEqual(summary["mean_spread"], 0.2)

    def test_one_window_without_spread_is_not_the_verdict(self):
        # The seeds meet in the first window (spread 0), so its small gap is outside it; over both
        # windows the gap (0.01) is well within the spread (0.1).
        curves = {("off", "1"): [4.0, 4.0, 3.0, 3.0], ("off", "2"): [4.0, 4.0, 3.2, 3.2],
                  ("on", "1"): [4.01, 4.01, 3.01, 3.01], ("on", "2"): [4.01, 4.01, 3.21, 3.21]}
        rows, summary = kcurves.compare(curves, 2)
        self.assertEqual([r["within"] for r in rows], [False, True])
        self.assertTrue(summary["overlap"])

    def test_a_gap_wider_than_the_seeds_spread_does_not(self):
        # The kernels' curve ends 0.5 higher in the second window, where the seeds agree to 0.1.
        curves = {("off", "1"): [4.0, 4.0, 3.0, 3.0], ("off", "2"): [4.1, 4.1, 3.1, 3.1],
                  ("on", "1"): [4.0, 4.0, 3.5, 3.5], ("on", "2"): [4.1, 4.1, 3.6, 3.6]}
        rows, summary = kcurves.compare(curves, 2)
        self.assertEqual([r["within"] for r in rows], [True, False])
        self.assertFalse(summary["overlap"])
        self.assertEqual(kcurves.verdict_text(summary), "no")
        self.assertAlmostEqual(summary["largest_gap"], 0.5)
        self.assertAlmostEqual(summary["largest_spread"], 0.1)

    def test_an_offset_in_most_windows_is_unclear_though_the_averages_overlap(self):
        # A wide spread in the first window (1.0) carries the averages; in the other two the kernels'
        # curve lies 0.1 above the other while the seeds agree to 0.02.
        curves = {("off", "1"): [5.0, 3.0, 2.0], ("off", "2"): [6.0, 3.02, 2.02],
                  ("on", "1"): [5.0, 3.1, 2.1], ("on", "2"): [6.0, 3.12, 2.12]}
        rows, summary = kcurves.compare(curves, 1)
        self.assertEqual([r["within"] for r in rows], [True, False, False])
        self.assertLess(summary["mean_gap"], summary["mean_spread"])
        self.assertEqual(summary["verdict"], "unclear")
        self.assertFalse(summary["overlap"])
        self.assertEqual(kcurves.verdict_text(summary), "unclear: 2 of 3 windows outside the spread; run more SEEDS")
        # Half the windows outside is still an overlap: with two seeds a window's spread is often small.
        rows, summary = kcurves.compare({k: v[:2] for k, v in curves.items()}, 1)
        self.assertEqual(summary["verdict"], "yes")

    def test_the_table_and_a_run_without_a_curve(self):
        here = os.path.dirname(__file__)
        script = os.path.join(here, "..", "..", "bench", "kernel_curves.py")
        with tempfile.TemporaryDirectory() as d:
            runs = [f"gpt2:{s}:{seed}:" + finished_log(d, f"{s}{seed}", [3.0 + int(seed) * 0.1] * 4)
                    for s in ("on", "off") for seed in ("1", "2")]
            out = subprocess.run([sys.executable, script, "--window", "2", *runs], capture_output=True, text=True)
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertIn("### gpt2: 4 steps, seeds 1, 2", out.stdout)
            self.assertIn("| 1–2 | 3.1500 | 3.1500 | 0.0000 | 0.1000 | yes |", out.stdout)
            self.assertIn("| gpt2 | 0.0000 | 0.1000 | 2 of 2 | 0.0000 / 0.1000 | yes |", out.stdout)
            broken = runs[:3] + ["gpt2:off:2:" + finished_log(d, "crashed", None)]
            out = subprocess.run([sys.executable, script, *broken], capture_output=True, text=True)
            self.assertEqual(out.returncode, 1)
            self.assertIn("gpt2 kernels off seed 2", out.stderr)
            self.assertIn("fewer than two seeds", out.stderr)


if __name__ == "__main__":
    unittest.main()
