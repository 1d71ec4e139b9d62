// The decoders' kernels (kernels/fused_kernels.h, kernels/training_kernels.h for rotary's backward)
// as xpuperf's rotary_qkv, linear_rotary_qkv, linear, linear_silu_mul, silu_mul, decode_attention and
// argmax. Most are for inference, a decoding step's 1 to 4 rows and its cache.

#include <cmath>

#include "kernels/training_kernels.h"
#include "nvidia_ops.h"

namespace xpuperf::nvidia {
namespace {

using ops::RotatedQkv;

std::optional<torch::Tensor> kernel_silu_mul(const torch::Tensor& gate_up) {
  if (switched_off("silu_mul")) return std::nullopt;
  const auto width = gate_up.size(-1) / 2;
  kernels::Element e{};
  if (packable(gate_up, width, e)) {
    const c10::cuda::CUDAGuard guard(gate_up.device());
    auto sizes = gate_up.sizes().vec();
    sizes.back() = width;
    auto out = torch::empty(sizes, gate_up.options());
    run_kernel("xpuperf::silu_mul", [&] {
      return kernels::silu_mul(e, gate_up.data_ptr(), out.data_ptr(), gate_up.numel() / (2 * width), width,
                               stream_of(gate_up));
    });
    return out;
  }
  return std::nullopt;
}

// Whether the GEMV takes x (1 to kMaxGemvRows rows) and weight; e: their element type.
bool gemv_takes(const torch::Tensor& x, const torch::Tensor& weight, kernels::Element& e) {
  const auto width = x.size(-1);
  const auto rows = width == 0 ? 0 : x.numel() / width;
  return rows >= 1 && rows <= kernels::kMaxGemvRows && packable(x, width, e) && weight.dim() == 2 &&
         weight.size(1) == width && weight.scalar_type() == x.scalar_type() && weight.is_contiguous() &&
         aligned(weight) && weight.device() == x.device();
}

// The rotary kernels' arguments for q, k and v of batch × tokens rows of `like`'s type and device:
// the tables and, with a cache, the layer's cache (the outputs' pointers left to the caller), or
// nothing when the kernels do not take them.
std::optional<kernels::RotaryQkv> rotary_arguments(const torch::Tensor& like, std::int64_t batch, std::int64_t tokens,
                                                   std::int64_t heads, std::int64_t kv_heads, std::int64_t dim,
                                                   const torch::Tensor& cos, const torch::Tensor& sin_signed,
                                                   const ops::CacheWrite* cache) {
  const auto same = [&](const torch::Tensor& t) {
    return t.scalar_type() == like.scalar_type() && t.is_contiguous() && t.device() == like.device();
  };
  if (!(dim % 2 == 0 && same(cos) && same(sin_signed) && cos.sizes() == sin_signed.sizes() &&
        (cos.size(0) == 1 || cos.size(0) == batch) && cos.size(1) == tokens && cos.size(-1) == dim))
    return std::nullopt;
  kernels::RotaryQkv a;
  a.cos = cos.data_ptr();
  a.sin_signed = sin_signed.data_ptr();
  if (cache) {
    const auto &k_cache = cache->k_cache, &v_cache = cache->v_cache;
    const auto &slots = cache->slots, &positions = cache->positions;
    if (!(same(k_cache) && same(v_cache) && slots.is_contiguous() && slots.device() == like.device() &&
          positions.device() == like.device() && slots.scalar_type() == torch::kLong &&
          positions.scalar_type() == torch::kLong && (tokens == 1 || positions.stride(1) == 1)))
      return std::nullopt;
    a.k_cache = k_cache.data_ptr();
    a.v_cache = v_cache.data_ptr();
    a.slots = slots.data_ptr<std::int64_t>();
    a.positions = positions.data_ptr<std::int64_t>();
    a.positions_row_stride = positions.stride(0);
    a.max_tokens = k_cache.size(1);
  }
  a.batch = batch, a.tokens = tokens, a.heads = heads, a.kv_heads = kv_heads, a.head_dim = dim;
  a.cos_batch = cos.size(0);
  return a;
}

std::optional<RotatedQkv> kernel_rotary_qkv(const torch::Tensor& qkv, std::int64_t heads, std::int64_t kv_heads,
                                            const torch::Tensor& cos, const torch::Tensor& sin_signed,
                                            const ops::CacheWrite* cache) {
  if (switched_off("rotary_qkv")) return std::nullopt;
  const auto batch = qkv.size(0), tokens = qkv.size(1), dim = qkv.size(3);
  kernels::Element e{};
  if (!qkv.is_cuda() || !qkv.is_contiguous() || !element_of(qkv, e)) return std::nullopt;
  auto a = rotary_arguments(qkv, batch, tokens, heads, kv_heads, dim, cos, sin_signed, cache);
  if (!a) return std::nullopt;
  const c10::cuda::CUDAGuard guard(qkv.device());
  RotatedQkv out;
  out.q = torch::empty({batch, tokens, heads, dim}, qkv.options());
  const bool decoding = cache && cache->decoding;  // the attention reads k and v from the cache
  if (!decoding) {
    out.k = torch::empty({batch, tokens, kv_heads, dim}, qkv.options());
    out.v = qkv.narrow(2, heads + kv_heads, kv_heads);
  }
  a->qkv = qkv.data_ptr();
  a->q = out.q.data_ptr();
  a->k = decoding ? nullptr : out.k.data_ptr();
  out.cached = cache != nullptr;
  run_kernel("xpuperf::rotary_qkv", [&] { return kernels::rotary_qkv(e, *a, stream_of(qkv)); });
  return out;
}

// A decoding step's q/k/v GEMV and rotary in one kernel (fused_kernels.h: gemv_rotary_qkv).
std::optional<RotatedQkv> kernel_linear_rotary_qkv(const torch::Tensor& x, const torch::Tensor& qkv_weight,
                                                   std::int64_t heads, std::int64_t kv_heads, std::int64_t dim,
                                                   const torch::Tensor& cos, const torch::Tensor& sin_signed,
                                                   const ops::CacheWrite* cache) {
  if (switched_off("gemv_rotary_qkv")) return std::nullopt;
  kernels::Element e{};
  if (!cache || !cache->decoding || x.dim() != 3 || !gemv_takes(x, qkv_weight, e) ||
      qkv_weight.size(0) != (heads + 2 * kv_heads) * dim)
    return std::nullopt;
  const auto batch = x.size(0), tokens = x.size(1);
  auto a = rotary_arguments(x, batch, tokens, heads, kv_heads, dim, cos, sin_signed, cache);
  if (!a) return std::nullopt;
  const c10::cuda::CUDAGuard guard(x.device());
  RotatedQkv out;
  out.q = torch::empty({batch, tokens, heads, dim}, x.options());
  out.cached = true;
  a->q = out.q.data_ptr();
  run_kernel("xpuperf::gemv_rotary_qkv", [&] {
    return kernels::gemv_rotary_qkv(e, x.data_ptr(), qkv_weight.data_ptr(), *a, x.size(-1), stream_of(x));
  });
  return out;
}

// Rotary positions on a joined q/k/v with their backward, one kernel each way (training_kernels.h):
// q, k rotated and v copied out of qkv; back, qkv's whole gradient in one pass.
struct KernelRotaryQkv : torch::autograd::Function<KernelRotaryQkv> {
  static kernels::RotaryShape shape(const torch::Tensor& qkv, const torch::Tensor& cos, std::int64_t heads,
                                    std::int64_t kv_heads) {
    kernels::RotaryShape s;
    s.batch = qkv.size(0), s.tokens = qkv.size(1), s.heads = heads, s.kv_heads = kv_heads, s.head_dim = qkv.size(3);
    s.cos_batch = cos.size(0);
    return s;
  }

  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& qkv,
                                                const torch::Tensor& cos, const torch::Tensor& sin_signed,
                                                std::int64_t heads, std::int64_t kv_heads) {
    kernels::Element e{}, table{};
    element_of(qkv, e);
    element_of(cos, table);
    const c10::cuda::CUDAGuard guard(qkv.device());
    const auto s = shape(qkv, cos, heads, kv_heads);
    auto q = torch::empty({s.batch, s.tokens, heads, s.head_dim}, qkv.options());
    auto k = torch::empty({s.batch, s.tokens, kv_heads, s.head_dim}, qkv.options()), v = torch::empty_like(k);
    check(kernels::rotary_forward(e, table, s, qkv.data_ptr(), cos.data_ptr(), sin_signed.data_ptr(), q.data_ptr(),
                                  k.data_ptr(), v.data_ptr(), stream_of(qkv)),
          "rotary_forward");
    ctx->save_for_backward({cos, sin_signed});
    ctx->saved_data["heads"] = heads;
    ctx->saved_data["kv_heads"] = kv_heads;
    ctx->saved_data["type"] = static_cast<std::int64_t>(qkv.scalar_type());
    ctx->saved_data["batch"] = s.batch;
    ctx->saved_data["tokens"] = s.tokens;
    return {q, k, v};
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &cos = saved[0], &sin_signed = saved[1];
    const auto heads = ctx->saved_data["heads"].toInt(), kv_heads = ctx->saved_data["kv_heads"].toInt();
    const auto type = static_cast<torch::ScalarType>(ctx->saved_data["type"].toInt());
    const auto b = ctx->saved_data["batch"].toInt(), t = ctx->saved_data["tokens"].toInt(), d = cos.size(-1);
    const auto options = cos.options().dtype(type);
    // An output nothing used has no gradient: zeros in its place.
    const auto given = [&](std::size_t n, std::int64_t heads_of) {
      return grads[n].defined() ? grads[n].to(type).contiguous() : torch::zeros({b, t, heads_of, d}, options);
    };
    const auto grad_q = given(0, heads), grad_k = given(1, kv_heads), grad_v = given(2, kv_heads);
    kernels::Element e{}, table{};
    element_of(type, e);
    element_of(cos, table);
    const c10::cuda::CUDAGuard guard(cos.device());
    auto grad_qkv = torch::empty({b, t, heads + 2 * kv_heads, d}, options);
    const auto s = shape(grad_qkv, cos, heads, kv_heads);
    check(kernels::rotary_backward(e, table, s, grad_q.data_ptr(), grad_k.data_ptr(), grad_v.data_ptr(), cos.data_ptr(),
                                   sin_signed.data_ptr(), grad_qkv.data_ptr(), stream_of(grad_qkv)),
          "rotary_backward");
    return {grad_qkv, torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

// Where the training kernels take them: qkv (batch, tokens, heads + 2 kv_heads, head_dim) contiguous of
// a kernel type, the tables (1 or batch, tokens, 1, head_dim) contiguous, of qkv's type or float.
std::optional<RotatedQkv> kernel_rotary_qkv_with_backward(const torch::Tensor& qkv, std::int64_t heads,
                                                          std::int64_t kv_heads, const torch::Tensor& cos,
                                                          const torch::Tensor& sin_signed) {
  kernels::Element e{}, table{};
  const auto table_fits = [&](const torch::Tensor& t) {
    return t.dim() == 4 && t.is_contiguous() && t.device() == qkv.device() && t.scalar_type() == cos.scalar_type() &&
           (t.size(0) == 1 || t.size(0) == qkv.size(0)) && t.size(1) == qkv.size(1) && t.size(2) == 1 &&
           t.size(3) == qkv.size(3);
  };
  if (!qkv.is_cuda() || qkv.dim() != 4 || !qkv.is_contiguous() || !element_of(qkv, e) || qkv.size(3) % 2 != 0 ||
      qkv.size(2) != heads + 2 * kv_heads || !element_of(cos, table) ||
      (cos.scalar_type() != qkv.scalar_type() && cos.scalar_type() != torch::kFloat) || !table_fits(cos) ||
      !table_fits(sin_signed))
    return std::nullopt;
  const auto outs = KernelRotaryQkv::apply(qkv, cos, sin_signed, heads, kv_heads);
  return RotatedQkv{outs[0], outs[1], outs[2], false};
}

std::optional<torch::Tensor> kernel_linear(const torch::Tensor& x, const torch::Tensor& weight) {
  if (switched_off("gemv")) return std::nullopt;
  kernels::Element e{};
  if (!gemv_takes(x, weight, e)) return std::nullopt;
  const c10::cuda::CUDAGuard guard(x.device());
  const auto width = x.size(-1), rows = x.numel() / width;
  auto sizes = x.sizes().vec();
  sizes.back() = weight.size(0);
  auto y = torch::empty(sizes, x.options());
  run_kernel("xpuperf::gemv", [&] {
    return kernels::gemv(e, x.data_ptr(), weight.data_ptr(), y.data_ptr(), rows, weight.size(0), width, stream_of(x));
  });
  return y;
}

std::optional<torch::Tensor> kernel_linear_silu_mul(const torch::Tensor& x, const torch::Tensor& gate_up_weight) {
  if (switched_off("gemv_silu_mul")) return std::nullopt;
  kernels::Element e{};
  if (!gemv_takes(x, gate_up_weight, e) || gate_up_weight.size(0) % 2 != 0) return std::nullopt;
  const c10::cuda::CUDAGuard guard(x.device());
  const auto width = x.size(-1), rows = x.numel() / width, units = gate_up_weight.size(0) / 2;
  auto sizes = x.sizes().vec();
  sizes.back() = units;
  auto y = torch::empty(sizes, x.options());
  run_kernel("xpuperf::gemv_silu_mul", [&] {
    return kernels::gemv_silu_mul(e, x.data_ptr(), gate_up_weight.data_ptr(), y.data_ptr(), rows, units, width,
                                  stream_of(x));
  });
  return y;
}

// The decode-attention kernel on q (batch, heads, tokens, dim) over k and v (a cache of slots or a
// pool of blocks: `a` says which, with the positions and the visible keys): the rest of `a` filled
// in, the workspace made, the kernel run. Nothing where q, as the kernel reads it, is unaligned.
std::optional<torch::Tensor> run_decode_attention(const torch::Tensor& q, const torch::Tensor& k,
                                                  const torch::Tensor& v, kernels::Element e,
                                                  kernels::DecodeAttention a, const char* name) {
  const c10::cuda::CUDAGuard guard(q.device());
  // The kernel reads q as (batch, tokens, heads, dim), which is how the models make it (a view of the
  // projection's output): then no copy.
  const auto rows_first = q.transpose(1, 2).contiguous();
  if (!aligned(rows_first)) return std::nullopt;
  auto out = torch::empty_like(rows_first);
  a.q = rows_first.data_ptr();
  a.k_cache = k.data_ptr();
  a.v_cache = v.data_ptr();
  a.out = out.data_ptr();
  a.batch = q.size(0), a.tokens = q.size(2), a.heads = q.size(1), a.kv_heads = k.size(2), a.head_dim = q.size(3);
  a.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(a.head_dim)));
  torch::Tensor partial;
  if (const auto floats = kernels::decode_attention_workspace(e, a); floats > 0) {
    partial = torch::empty({floats}, q.options().dtype(torch::kFloat));
    a.partial = partial.data_ptr<float>();
  }
  run_kernel(name, [&] { return kernels::decode_attention(e, a, stream_of(q)); });
  return out.transpose(1, 2);
}

std::optional<torch::Tensor> kernel_decode_attention(const torch::Tensor& q, const torch::Tensor& k_cache,
                                                     const torch::Tensor& v_cache, const torch::Tensor& positions,
                                                     std::int64_t visible) {
  if (switched_off("decode_attention")) return std::nullopt;
  const auto batch = q.size(0), heads = q.size(1), tokens = q.size(2), dim = q.size(3);
  const auto same = [&](const torch::Tensor& t) {
    return t.scalar_type() == q.scalar_type() && t.is_contiguous() && t.device() == q.device() && aligned(t);
  };
  kernels::Element e{};
  if (!q.is_cuda() || !element_of(q, e) || !kernels::decode_attention_takes(e, dim) || !same(k_cache) ||
      !same(v_cache) || k_cache.size(3) != dim || heads % k_cache.size(2) != 0 || batch > k_cache.size(0) ||
      positions.scalar_type() != torch::kLong || positions.device() != q.device() || positions.size(0) != batch ||
      positions.size(1) != tokens || (tokens > 1 && positions.stride(1) != 1))
    return std::nullopt;
  kernels::DecodeAttention a;
  a.positions = positions.data_ptr<std::int64_t>();
  a.positions_row_stride = positions.stride(0);
  a.max_tokens = k_cache.size(1), a.visible = visible;
  return run_decode_attention(q, k_cache, v_cache, e, a, "xpuperf::decode_attention");
}

// The same over a paged cache: pools (blocks, block_size, kv_heads, head_dim), one token a row.
std::optional<torch::Tensor> kernel_paged_decode_attention(const torch::Tensor& q, const torch::Tensor& k_pool,
                                                           const torch::Tensor& v_pool,
                                                           const torch::Tensor& block_table,
                                                           const torch::Tensor& positions, std::int64_t visible) {
  if (switched_off("decode_attention")) return std::nullopt;
  const auto batch = q.size(0), heads = q.size(1), tokens = q.size(2), dim = q.size(3);
  const auto same = [&](const torch::Tensor& t) {
    return t.scalar_type() == q.scalar_type() && t.is_contiguous() && t.device() == q.device() && aligned(t);
  };
  const auto index = [&](const torch::Tensor& t) {
    return t.scalar_type() == torch::kLong && t.device() == q.device() && t.dim() == 2 && t.size(0) == batch &&
           t.stride(1) == 1;
  };
  kernels::Element e{};
  if (!q.is_cuda() || tokens != 1 || !element_of(q, e) || !kernels::decode_attention_takes(e, dim) || !same(k_pool) ||
      !same(v_pool) || k_pool.dim() != 4 || k_pool.size(3) != dim || heads % k_pool.size(2) != 0 ||
      !index(block_table) || !index(positions) || visible > block_table.size(1) * k_pool.size(1))
    return std::nullopt;
  kernels::DecodeAttention a;
  a.positions = positions.data_ptr<std::int64_t>();
  a.positions_row_stride = positions.stride(0);
  a.block_table = block_table.data_ptr<std::int64_t>();
  a.block_table_stride = block_table.stride(0);
  a.block_size = k_pool.size(1);
  a.max_tokens = block_table.size(1) * k_pool.size(1), a.visible = visible;
  return run_decode_attention(q, k_pool, v_pool, e, a, "xpuperf::paged_decode_attention");
}

// Fewer rows than this: ATen's reduction, which spreads a row over many blocks.
constexpr std::int64_t kMinArgmaxRows = 64;

std::optional<torch::Tensor> kernel_argmax(const torch::Tensor& x) {
  if (switched_off("argmax")) return std::nullopt;
  kernels::Element e{};
  if (!x.is_cuda() || x.dim() == 0 || !x.is_contiguous() || !element_of(x, e) || x.size(-1) == 0) return std::nullopt;
  const auto width = x.size(-1), rows = x.numel() / width;
  if (rows < kMinArgmaxRows) return std::nullopt;
  const c10::cuda::CUDAGuard guard(x.device());
  auto sizes = x.sizes().vec();
  sizes.pop_back();
  auto out = torch::empty(sizes, x.options().dtype(torch::kLong));
  run_kernel("xpuperf::argmax", [&] {
    return kernels::argmax_rows(e, x.data_ptr(), out.data_ptr<std::int64_t>(), rows, width, stream_of(x));
  });
  return out;
}

using RotatedTuple = std::tuple<torch::Tensor, torch::Tensor, torch::Tensor, bool>;

RotatedTuple tuple_of(RotatedQkv&& r) {
  return {std::move(r.q), std::move(r.k), std::move(r.v), r.cached};
}

RotatedTuple cuda_rotary_qkv(const torch::Tensor& qkv, std::int64_t heads, std::int64_t kv_heads,
                             const torch::Tensor& cos, const torch::Tensor& sin_signed, const OptionalTensor& k_cache,
                             const OptionalTensor& v_cache, const OptionalTensor& slots,
                             const OptionalTensor& positions, bool decoding) {
  const ops::CacheWrite write{value_of(k_cache), value_of(v_cache), value_of(slots), value_of(positions), decoding};
  const auto* cache = k_cache.has_value() ? &write : nullptr;
  if (!recording({qkv, cos, sin_signed}))
    if (auto done = kernel_rotary_qkv(qkv, heads, kv_heads, cos, sin_signed, cache)) return tuple_of(std::move(*done));
  if (!cache)  // training: the kernels with a backward
    if (auto done = kernel_rotary_qkv_with_backward(qkv, heads, kv_heads, cos, sin_signed))
      return tuple_of(std::move(*done));
  return tuple_of(ops::composite::rotary_qkv(qkv, heads, kv_heads, cos, sin_signed));
}

torch::Tensor cuda_linear(const torch::Tensor& x, const torch::Tensor& weight) {
  if (!recording({x, weight}))
    if (auto done = kernel_linear(x, weight)) return *done;
  return ops::composite::linear(x, weight);
}

RotatedTuple cuda_linear_rotary_qkv(const torch::Tensor& x, const torch::Tensor& qkv_weight, std::int64_t heads,
                                    std::int64_t kv_heads, std::int64_t head_dim, const torch::Tensor& cos,
                                    const torch::Tensor& sin_signed, const OptionalTensor& k_cache,
                                    const OptionalTensor& v_cache, const OptionalTensor& slots,
                                    const OptionalTensor& positions, bool decoding) {
  const ops::CacheWrite write{value_of(k_cache), value_of(v_cache), value_of(slots), value_of(positions), decoding};
  const auto* cache = k_cache.has_value() ? &write : nullptr;
  if (!recording({x, qkv_weight}))
    if (auto done = kernel_linear_rotary_qkv(x, qkv_weight, heads, kv_heads, head_dim, cos, sin_signed, cache))
      return tuple_of(std::move(*done));
  const auto qkv = cuda_linear(x, qkv_weight).view({x.size(0), x.size(1), heads + 2 * kv_heads, head_dim});
  return cuda_rotary_qkv(qkv, heads, kv_heads, cos, sin_signed, k_cache, v_cache, slots, positions, decoding);
}

torch::Tensor cuda_silu_mul(const torch::Tensor& gate_up) {
  if (!recording({gate_up}))
    if (auto done = kernel_silu_mul(gate_up)) return *done;
  return ops::composite::silu_mul(gate_up);
}

torch::Tensor cuda_linear_silu_mul(const torch::Tensor& x, const torch::Tensor& gate_up_weight) {
  if (!recording({x, gate_up_weight}))
    if (auto done = kernel_linear_silu_mul(x, gate_up_weight)) return *done;
  return cuda_silu_mul(cuda_linear(x, gate_up_weight));
}

torch::Tensor cuda_decode_attention(const torch::Tensor& q, const torch::Tensor& k_cache, const torch::Tensor& v_cache,
                                    const torch::Tensor& positions, std::int64_t visible) {
  if (visible > 0 && !recording({q}))
    if (auto done = kernel_decode_attention(q, k_cache, v_cache, positions, visible)) return *done;
  return ops::composite::decode_attention(q, k_cache, v_cache, positions, visible);
}

torch::Tensor cuda_paged_decode_attention(const torch::Tensor& q, const torch::Tensor& k_pool,
                                          const torch::Tensor& v_pool, const torch::Tensor& block_table,
                                          const torch::Tensor& positions, std::int64_t visible) {
  if (visible > 0 && !recording({q}))
    if (auto done = kernel_paged_decode_attention(q, k_pool, v_pool, block_table, positions, visible)) return *done;
  return ops::composite::paged_decode_attention(q, k_pool, v_pool, block_table, positions, visible);
}

torch::Tensor cuda_argmax(const torch::Tensor& x) {
  if (auto done = kernel_argmax(x)) return *done;
  return ops::composite::argmax(x);
}

}  // namespace

void register_decode_ops(torch::Library& m) {
  m.impl("rotary_qkv", &cuda_rotary_qkv);
  m.impl("linear_rotary_qkv", &cuda_linear_rotary_qkv);
  m.impl("linear", &cuda_linear);
  m.impl("linear_silu_mul", &cuda_linear_silu_mul);
  m.impl("silu_mul", &cuda_silu_mul);
  m.impl("decode_attention", &cuda_decode_attention);
  m.impl("paged_decode_attention", &cuda_paged_decode_attention);
  m.impl("argmax", &cuda_argmax);
}

}  // namespace xpuperf::nvidia
