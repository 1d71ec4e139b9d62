"""bench/kernel_classes.py: kernel names from real profiles (the case READMEs', Nsight's and
torch.profiler's) fall in the class the speed issue's tables need, and the table adds up."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))
import kernel_classes as kc  # noqa: E402


class KernelClasses(unittest.TestCase):
    def test_names_from_real_profiles(self):
        cases = {
            "cutlass_75_tensorop_bf16_s1688gemm_bf16_256x128_32x3_nn_align1": "GEMM",
            "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas": "GEMM",
            "nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NTT": "GEMM",
            "void xpuperf::models::kernels::(anonymous namespace)::gemv_kernel<__nv_bfloat16, 1>(...)": "GEMM",
            "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4, false>>": "attention",
            "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_3_64x64x64_4x1x1_kernel0_0": "attention",
            "fmha_cutlassB_bf16_aligned_64x64_k64_sm80": "attention",
            "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>": "normalisation",
            "triton_red_fused_native_layer_norm_native_layer_norm_backward_12": "normalisation",
            "void cudnn::bn_fw_tr_1C11_singleread_spec<__nv_bfloat16, 512, true, 1, 2, 0>": "normalisation",
            "void xpuperf::models::kernels::(anonymous namespace)::add_layer_norm_kernel<__nv_bfloat16>": "normalisation",
            "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl>": "element-wise",
            "triton_poi_fused_add_gelu_3": "element-wise",
            "void at::native::(anonymous namespace)::fused_dropout_kernel_vec<c10::BFloat16, float, unsigned int, 1, 4, bool>": "element-wise",
            "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, at::native::(anonymous namespace)::LogSoftMaxForwardEpilogue>": "loss",
            "void xpuperf::models::kernels::(anonymous namespace)::cross_entropy_backward_kernel<__nv_bfloat16>": "loss",
            "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::TensorListMetadata<4>, FusedAdamMathFunctor>": "optimizer",
            "void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda>": "copies",
            "void at::native::(anonymous namespace)::CatArrayBatchedCopy<at::native::(anonymous namespace)::OpaqueType<2u>, unsigned int, 4, 64, 64>": "copies",
            "void at::native::(anonymous namespace)::indexSelectLargeIndex<c10::BFloat16, long, unsigned int, 2, 2, -2, true>": "copies",
            "sm90_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x128x64": "GEMM",
            "void cudnn::cnn::conv2d_grouped_direct_kernel<false, true, false, false, 0, 0, int, __nv_bfloat16>": "convolution",
            "some_unknown_kernel": "other",
        }
        for name, want in cases.items():
            with self.subTest(name=name):
                self.assertEqual(kc.classify(name), want)

    def test_times_add_up_to_the_step_with_idle(self):
        rows = [("nvjet_tst_128x256", 30.0), ("flash_fwd_kernel", 8.0), ("triton_poi_fused_add_gelu_3", 4.0),
                ("multi_tensor_apply_kernel", 2.0)]
        t = kc.class_times(rows, step_ms=50.0)
        self.assertEqual(t, {"GEMM": 30.0, "attention": 8.0, "element-wise": 4.0, "optimizer": 2.0, "idle": 6.0})
        self.assertNotIn("idle", kc.class_times(rows))
        table = kc.class_table([("xpuperf", t), ("compile", kc.class_times(rows[:2], step_ms=40.0))])
        self.assertIn("| GEMM | 30.00 | 60% | 30.00 | 75% |", table)
        self.assertIn("| idle | 6.00 | 12% | 2.00 | 5% |", table)
        self.assertIn("| optimizer | 2.00 | 4% | 0.00 | 0% |", table)
        self.assertIn("| **step** | **50.00** | 100% | **40.00** | 100% |", table)
        self.assertLess(table.index("| GEMM |"), table.index("| idle |"))


    def test_nsys_report_beside_the_pytorch_profile(self):
        bench = os.path.join(os.path.dirname(__file__), "..", "..", "bench")
        with tempfile.TemporaryDirectory() as d:
            with open(f"{d}/run.log", "w") as f:
                f.write('[PerfLog] {"event":"FINISHED","value":{"global_batch_size":16,'
                        '"steady_samples_per_second":320.0}}\n')
            with open(f"{d}/torch.jsonl", "w") as f:
                f.write(json.dumps({"figure": "kernels", "case": "gpt2", "mode": "compile",
                                    "classes": {"GEMM": 30.0, "idle": 2.0}}) + "\n")
            report = ("Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n"
                      "60,900000000,360,1,1,1,1,1,nvjet_tst_128x256\n"
                      "30,300000000,30,1,1,1,1,1,flash_fwd_kernel\n")
            r = subprocess.run([sys.executable, os.path.join(bench, "nsys_kernels.py"), "gpt2", "30", f"{d}/run.log",
                                f"{d}/torch.jsonl"], input=report, text=True, capture_output=True, check=True)
        self.assertIn("| nvjet_tst_128x256 | 30.00 | 12 | 75.0% |", r.stdout)
        self.assertIn("| class | xpuperf ms a step | share | PyTorch compile ms a step | share |", r.stdout)
        self.assertIn("| idle | 10.00 | 20% | 2.00 | 6% |", r.stdout)  # a 50 ms step: 16 / 320 s

if __name__ == "__main__":
    unittest.main()
