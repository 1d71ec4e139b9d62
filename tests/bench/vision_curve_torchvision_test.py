"""bench/vision_curve_torchvision.py without torch: it reads `xpuperf config`'s lines and schedules
the learning rate as xpuperf's runtime does (scheduled_lr in src/xpuperf/train/lr_schedule.cpp)."""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))
import vision_curve_torchvision as tv  # noqa: E402


class VisionCurveTorchvision(unittest.TestCase):
    def test_config_lines_lose_their_sources_and_quotes(self):
        text = ("# merged config of resnet50:libtorch:CPU:1:1:1, vendor cpu\n"
                "data_dir: /tmp/fm64               # --data-dir\n"
                'init_checkpoint: ""               # cases/training/resnet50/libtorch/config/_base.yaml:14\n'
                "lr: 0.0125                        # vendors/cpu/training/resnet50-libtorch/config/config_CPUx1x1.yaml:9\n")
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
            f.write(text)
        try:
            cfg = tv.read_config(f.name)
        finally:
            os.unlink(f.name)
        self.assertEqual(cfg, {"data_dir": "/tmp/fm64", "init_checkpoint": "", "lr": "0.0125"})

    def test_the_schedule_is_xpuperfs(self):
        # Warm-up of 4 steps to lr 1, then 4 steps of decay (total 8), 2 steps an epoch.
        lr = lambda schedule, step, gamma=1.0: tv.scheduled_lr(schedule, 1.0, step, 4, 8, 2, gamma)  # noqa: E731
        self.assertAlmostEqual(lr("cosine", 0), 0.25)
        self.assertAlmostEqual(lr("cosine", 3), 1.0)
        self.assertAlmostEqual(lr("cosine", 4), 1.0)
        self.assertAlmostEqual(lr("cosine", 6), 0.5)
        self.assertAlmostEqual(lr("cosine", 20), 0.0)
        self.assertAlmostEqual(lr("linear", 6), 0.5)
        self.assertAlmostEqual(lr("constant", 6), 1.0)
        self.assertAlmostEqual(lr("exponential", 5, gamma=0.5), 0.25)  # epoch 2
        with self.assertRaises(SystemExit):
            lr("step", 6)


if __name__ == "__main__":
    unittest.main()
