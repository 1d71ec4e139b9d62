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
            "dgrad2d_c1_k1_nhwc_specialized": "convolution",
            "wgrad2d_c1_k1_nhwc": "convolution",
            # The convolutional cases' batch norm kernels, the backward's reduction included (not "reduce").
            "void xpuperf::models::kernels::(anonymous namespace)::batch_norm_backward_reduce_kernel<__nv_bfloat16, true>": "normalisation",
            "xpuperf::models::kernels::(anonymous namespace)::batch_norm_statistics_finish_kernel(float const*)": "normalisation",
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
            # Kineto's full names (profile_steps): ATen's lambdas are not the LAMB optimizer.
            "void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda(c10::BFloat16)#1}>": "copies",
            "void at::native::vectorized_elementwise_kernel<8, at::native::GeluBackwardCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#1}::operator()() const>": "element-wise",
            "void at::native::reduce_kernel<128, 4, at::native::ReduceOp<c10::BFloat16, at::native::func_wrapper_t<c10::BFloat16, at::native::sum_functor<c10::BFloat16, float, c10::BFloat16>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>>": "element-wise",
            "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::NormTwoOps<float, float, float, true>, unsigned int, float, 4, 4> >": "optimizer",
            "void xpuperf::models::kernels::(anonymous namespace)::norm_backward_kernel<float, __nv_bfloat16, 1, true>(float const*)": "normalisation",
            "void cudnn::fusion::compute_dot_do_o_specialized<true, 64>(void const*, void const*, void*)": "attention",
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


    def test_the_runs_kernel_profile_beside_the_pytorch_profile(self):
        bench = os.path.join(os.path.dirname(__file__), "..", "..", "bench")
        with tempfile.TemporaryDirectory() as d:
            profile = {"steps": 20, "step_ms": 50.0, "device_ms_per_step": 41.0, "distinct_kernels": 3,
                       "kernels": [{"name": "nvjet_tst_128x256", "ms_per_step": 30.0, "calls_per_step": 12},
                                   {"name": "flash_fwd_kernel", "ms_per_step": 10.0, "calls_per_step": 1}]}
            with open(f"{d}/run.log", "w") as f:
                f.write("[PerfLog] " + json.dumps({"event": "FINISHED", "value": {"kernel_profile": profile}},
                                                  separators=(",", ":")) + "\n")
            with open(f"{d}/torch.jsonl", "w") as f:
                f.write(json.dumps({"figure": "kernels", "case": "gpt2", "mode": "compile",
                                    "classes": {"GEMM": 30.0, "idle": 2.0}}) + "\n")
            r = subprocess.run([sys.executable, os.path.join(bench, "run_kernels.py"), "gpt2", f"{d}/run.log",
                                f"{d}/torch.jsonl"], text=True, capture_output=True, check=True)
        self.assertIn("| nvjet_tst_128x256 | 30.00 | 12 | 73.2% |", r.stdout)
        self.assertIn("| all 3 kernels | 41.00 | | 100% |", r.stdout)
        self.assertIn("| class | xpuperf ms a step | share | PyTorch compile ms a step | share |", r.stdout)
        self.assertIn("| other | 1.00 | 2% |", r.stdout)  # the kernel past the listed ones
        self.assertIn("| idle | 9.00 | 18% | 2.00 | 6% |", r.stdout)  # a 50 ms step, 41 ms of kernels

    def test_a_run_without_a_profile_fails_saying_why(self):
        bench = os.path.join(os.path.dirname(__file__), "..", "..", "bench")
        with tempfile.TemporaryDirectory() as d:
            with open(f"{d}/run.log", "w") as f:
                f.write('[PerfLog] {"event":"FINISHED","value":{"kernel_profile":{"error":"no CUPTI"}}}\n')
            open(f"{d}/torch.jsonl", "w").close()
            r = subprocess.run([sys.executable, os.path.join(bench, "run_kernels.py"), "gpt2", f"{d}/run.log",
                                f"{d}/torch.jsonl"], text=True, capture_output=True)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("no CUPTI", r.stderr)

if __name__ == "__main__":
    unittest.main()
