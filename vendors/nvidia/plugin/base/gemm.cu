// computation-{FP64,FP32,TF32,FP16,BF16,FP8,INT8} on an NVIDIA GPU: dense GEMM through
// cuBLASLt with FP32 accumulation (FP64 for FP64, INT32 for INT8), timing every algorithm its
// heuristic proposes and keeping the fastest; C = A^T B in the layout of gemm_check.h, inputs
// generated on the device, sampled outputs checked on the host against exact sums.

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>

#include "cuda_util.h"
#include "xpuperf/base/base_benchmark.h"
#include "xpuperf/base/gemm_check.h"

namespace xpuperf::base::cuda {

namespace {

void check_lt(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string(what) + ": cuBLAS status " + std::to_string(static_cast<int>(status)));
}
#define XPUPERF_LT(call) check_lt((call), #call)

template <typename T>
__global__ void fill_levels(T* out, std::int64_t count, std::uint32_t seed, float scale) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    out[i] = T(static_cast<float>(gemm_level(static_cast<std::uint64_t>(i), seed)) * scale);
}
__global__ void fill_levels_double(double* out, std::int64_t count, std::uint32_t seed) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    out[i] = gemm_level(static_cast<std::uint64_t>(i), seed) / 8.0;
}
__global__ void fill_levels_int8(std::int8_t* out, std::int64_t count, std::uint32_t seed) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    out[i] = static_cast<std::int8_t>(gemm_level(static_cast<std::uint64_t>(i), seed));
}

struct Types {
  cudaDataType_t ab, cd, scale;
  cublasComputeType_t compute;
  std::size_t ab_size, cd_size;
};

Types types_of(const std::string& name) {
  if (name == "FP64") return {CUDA_R_64F, CUDA_R_64F, CUDA_R_64F, CUBLAS_COMPUTE_64F, 8, 8};
  if (name == "FP32") return {CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, 4, 4};
  if (name == "TF32") return {CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, 4, 4};
  if (name == "FP16") return {CUDA_R_16F, CUDA_R_16F, CUDA_R_32F, CUBLAS_COMPUTE_32F, 2, 2};
  if (name == "BF16") return {CUDA_R_16BF, CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F, 2, 2};
  if (name == "FP8") return {CUDA_R_8F_E4M3, CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F, 1, 2};
  return {CUDA_R_8I, CUDA_R_32I, CUDA_R_32I, CUBLAS_COMPUTE_32I, 1, 4};  // INT8
}

void fill(const std::string& name, void* p, std::int64_t count, std::uint32_t seed) {
  const int blocks = 4096, threads = 256;
  if (name == "FP64")
    fill_levels_double<<<blocks, threads>>>(static_cast<double*>(p), count, seed);
  else if (name == "FP32" || name == "TF32")
    fill_levels<float><<<blocks, threads>>>(static_cast<float*>(p), count, seed, 0.125f);
  else if (name == "FP16")
    fill_levels<__half><<<blocks, threads>>>(static_cast<__half*>(p), count, seed, 0.125f);
  else if (name == "BF16")
    fill_levels<__nv_bfloat16><<<blocks, threads>>>(static_cast<__nv_bfloat16*>(p), count, seed, 0.125f);
  else if (name == "FP8")
    fill_levels<__nv_fp8_e4m3><<<blocks, threads>>>(static_cast<__nv_fp8_e4m3*>(p), count, seed, 0.125f);
  else
    fill_levels_int8<<<blocks, threads>>>(static_cast<std::int8_t*>(p), count, seed);
  XPUPERF_CUDA(cudaGetLastError());
}

double element_value(const std::string& name, const void* c, std::int64_t at) {
  double v = 0;
  if (name == "FP64") {
    XPUPERF_CUDA(cudaMemcpy(&v, static_cast<const double*>(c) + at, 8, cudaMemcpyDeviceToHost));
  } else if (name == "FP32" || name == "TF32") {
    float f = 0;
    XPUPERF_CUDA(cudaMemcpy(&f, static_cast<const float*>(c) + at, 4, cudaMemcpyDeviceToHost));
    v = f;
  } else if (name == "FP16") {
    __half h;
    XPUPERF_CUDA(cudaMemcpy(&h, static_cast<const __half*>(c) + at, 2, cudaMemcpyDeviceToHost));
    v = __half2float(h);
  } else if (name == "BF16" || name == "FP8") {
    __nv_bfloat16 h;
    XPUPERF_CUDA(cudaMemcpy(&h, static_cast<const __nv_bfloat16*>(c) + at, 2, cudaMemcpyDeviceToHost));
    v = __bfloat162float(h);
  } else {
    std::int32_t i = 0;
    XPUPERF_CUDA(cudaMemcpy(&i, static_cast<const std::int32_t*>(c) + at, 4, cudaMemcpyDeviceToHost));
    v = i;
  }
  return v;
}

class CudaGemm : public BaseBenchmark {
 public:
  std::string filter(const BaseContext& ctx) override {
    if (auto why = need_device(ctx.device); !why.empty()) return why;
    const GemmPrecision* p = gemm_precision(ctx.metric);
    if (!p) return "unknown precision";
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, ctx.device) != cudaSuccess) return "cannot read the device's properties";
    const int cc = prop.major * 10 + prop.minor;
    if (p->name == "FP8" && cc < 89)
      return "FP8 needs compute capability 8.9 or newer (this is " + std::to_string(cc) + ")";
    if ((p->name == "BF16" || p->name == "TF32") && cc < 80)
      return p->name + " needs compute capability 8.0 or newer (this is " + std::to_string(cc) + ")";
    return "";
  }

  BaseResult run(const BaseContext& ctx) override {
    const GemmPrecision& p = *gemm_precision(ctx.metric);
    XPUPERF_CUDA(cudaSetDevice(ctx.device));
    const std::int64_t m = ctx.config.get_int("cuda_size"), n = m, k = m;
    const Types t = types_of(p.name);
    DeviceBuffer a(static_cast<std::size_t>(k * m) * t.ab_size), b(static_cast<std::size_t>(k * n) * t.ab_size);
    DeviceBuffer c(static_cast<std::size_t>(m * n) * t.cd_size);
    const std::size_t workspace_bytes = static_cast<std::size_t>(ctx.config.get_int("cuda_workspace_mib")) << 20;
    DeviceBuffer workspace(workspace_bytes);
    fill(p.name, a.get(), k * m, 1);
    fill(p.name, b.get(), k * n, 2);
    XPUPERF_CUDA(cudaMemset(c.get(), 0, c.bytes()));

    cublasLtHandle_t lt = nullptr;
    XPUPERF_LT(cublasLtCreate(&lt));
    std::shared_ptr<void> lt_guard(nullptr, [lt](void*) { cublasLtDestroy(lt); });
    cublasLtMatmulDesc_t op = nullptr;
    XPUPERF_LT(cublasLtMatmulDescCreate(&op, t.compute, t.scale));
    std::shared_ptr<void> op_guard(nullptr, [op](void*) { cublasLtMatmulDescDestroy(op); });
    const cublasOperation_t trans = CUBLAS_OP_T, no_trans = CUBLAS_OP_N;
    XPUPERF_LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &trans, sizeof trans));
    XPUPERF_LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &no_trans, sizeof no_trans));
    if (p.name == "FP8") {
      // Hopper's FP8 tensor cores accumulate in reduced precision unless partial sums are promoted
      // to FP32 now and then; fast accumulation skips that (as torch._scaled_mm's use_fast_accum).
      const std::int8_t fast = ctx.config.get_bool("cuda_fp8_fast_accum") ? 1 : 0;
      XPUPERF_LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof fast));
    }
    cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
    XPUPERF_LT(cublasLtMatrixLayoutCreate(&la, t.ab, static_cast<std::uint64_t>(k), static_cast<std::uint64_t>(m), k));
    XPUPERF_LT(cublasLtMatrixLayoutCreate(&lb, t.ab, static_cast<std::uint64_t>(k), static_cast<std::uint64_t>(n), k));
    XPUPERF_LT(cublasLtMatrixLayoutCreate(&lc, t.cd, static_cast<std::uint64_t>(m), static_cast<std::uint64_t>(n), m));
    std::shared_ptr<void> layout_guard(nullptr, [la, lb, lc](void*) {
      cublasLtMatrixLayoutDestroy(la);
      cublasLtMatrixLayoutDestroy(lb);
      cublasLtMatrixLayoutDestroy(lc);
    });
    cublasLtMatmulPreference_t pref = nullptr;
    XPUPERF_LT(cublasLtMatmulPreferenceCreate(&pref));
    std::shared_ptr<void> pref_guard(nullptr, [pref](void*) { cublasLtMatmulPreferenceDestroy(pref); });
    XPUPERF_LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes,
                                                    sizeof workspace_bytes));
    const int wanted = static_cast<int>(ctx.config.get_int("cuda_algorithms"));
    std::vector<cublasLtMatmulHeuristicResult_t> heuristics(static_cast<std::size_t>(std::max(1, wanted)));
    int found = 0;
    XPUPERF_LT(cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, lc, lc, pref, static_cast<int>(heuristics.size()),
                                              heuristics.data(), &found));
    if (found == 0) throw std::runtime_error("cuBLASLt proposes no algorithm for " + p.name + " on this device");

    const double one_d = 1, zero_d = 0;
    const float one_f = 1, zero_f = 0;
    const std::int32_t one_i = 1, zero_i = 0;
    const void* alpha = t.scale == CUDA_R_64F   ? static_cast<const void*>(&one_d)
                        : t.scale == CUDA_R_32I ? static_cast<const void*>(&one_i)
                                                : static_cast<const void*>(&one_f);
    const void* beta = t.scale == CUDA_R_64F   ? static_cast<const void*>(&zero_d)
                       : t.scale == CUDA_R_32I ? static_cast<const void*>(&zero_i)
                                               : static_cast<const void*>(&zero_f);
    cudaStream_t stream = nullptr;
    XPUPERF_CUDA(cudaStreamCreate(&stream));
    std::shared_ptr<void> stream_guard(nullptr, [stream](void*) { cudaStreamDestroy(stream); });
    auto gemm = [&](const cublasLtMatmulAlgo_t& algo) {
      return cublasLtMatmul(lt, op, alpha, a.get(), la, b.get(), lb, beta, c.get(), lc, c.get(), lc, &algo,
                            workspace.get(), workspace_bytes, stream);
    };
    EventTimer timer;
    // The fastest of the proposed algorithms, each timed over a few calls after one warm-up.
    int chosen = -1;
    double chosen_time = std::numeric_limits<double>::infinity();
    nlohmann::json tried = nlohmann::json::array();
    for (int i = 0; i < found; ++i) {
      if (gemm(heuristics[static_cast<std::size_t>(i)].algo) != CUBLAS_STATUS_SUCCESS) continue;
      timer.start(stream);
      for (int r = 0; r < 5; ++r) gemm(heuristics[static_cast<std::size_t>(i)].algo);
      const double seconds = timer.stop(stream) / 5;
      tried.push_back(seconds);
      if (seconds < chosen_time) chosen_time = seconds, chosen = i;
    }
    if (chosen < 0) throw std::runtime_error("every cuBLASLt algorithm proposed for " + p.name + " failed");
    const cublasLtMatmulAlgo_t algo = heuristics[static_cast<std::size_t>(chosen)].algo;

    const double flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
    const int calls = std::max(1, static_cast<int>(ctx.config.get_number("seconds") / chosen_time));
    for (int i = 0; i < static_cast<int>(ctx.config.get_int("warmup")); ++i) XPUPERF_LT(gemm(algo));
    std::vector<double> rates;
    BaseResult r;
    r.started_unix = unix_seconds();
    for (int rep = 0; rep < ctx.config.get_int("repeats"); ++rep) {
      timer.start(stream);
      for (int i = 0; i < calls; ++i) XPUPERF_LT(gemm(algo));
      rates.push_back(flops * calls / timer.stop(stream) / 1e12);
    }
    r.ended_unix = unix_seconds();
    XPUPERF_CUDA(cudaDeviceSynchronize());

    check_gemm_result(
        p, m, static_cast<int>(ctx.config.get_int("check_samples")),
        [&](std::int64_t i, std::int64_t j) { return element_value(p.name, c.get(), i + j * m); }, r);
    cudaDeviceProp prop{};
    XPUPERF_CUDA(cudaGetDeviceProperties(&prop, ctx.device));
    r.implementation = "cuBLASLt, fastest of " + std::to_string(found) + " algorithms, " + prop.name;
    add_gemm_figures(p, rates, r);
    r.details = {{"m", m},
                 {"n", n},
                 {"k", k},
                 {"calls_per_repeat", calls},
                 {"rates", rates},
                 {"algorithm", chosen},
                 {"algorithm_seconds", tried}};
    return r;
  }
};

XPUPERF_REGISTER_BASE("computation-FP64", "cuda", CudaGemm);
XPUPERF_REGISTER_BASE("computation-FP32", "cuda", CudaGemm);
XPUPERF_REGISTER_BASE("computation-TF32", "cuda", CudaGemm);
XPUPERF_REGISTER_BASE("computation-FP16", "cuda", CudaGemm);
XPUPERF_REGISTER_BASE("computation-BF16", "cuda", CudaGemm);
XPUPERF_REGISTER_BASE("computation-FP8", "cuda", CudaGemm);
XPUPERF_REGISTER_BASE("computation-INT8", "cuda", CudaGemm);

}  // namespace

}  // namespace xpuperf::base::cuda
