// Shared by the CPU and CUDA implementations of ewe_ext::memory_attention:
// the argument checks (one place, messages naming the argument) and the shapes they yield.
//
// The op computes eq. 1 of the EWE paper in one pass: a single softmax over the k*M memory
// keys and the L context keys, with log(k_b + 1) added to every context logit of batch row b.
//
//   query          [B, Hq, Q, D]   float32 / bfloat16 (CPU), float16 / bfloat16 / float32 (CUDA)
//   key, value     [B, Hkv, L, D]  the context (cache included), query's dtype
//   mem_key/value  [B, Hkv, N, D]  all memory units back to back, query's dtype; N may be 0
//   mem_bias       [B, 1, 1, N]    float32 additive (0 / -inf on row padding), or None
//   log_ctx_weight [B, 1, 1, 1]    float32 (or [B]): log(k_b + 1)
//   ctx_bias       [B|1, 1, Q, L]  float32 additive context bias, or None = causal with the
//                                  Q queries at the last Q of the L key positions
//   returns        [B, Q, Hq, D]   contiguous, query's dtype
//
// Every tensor needs stride 1 on its last dimension; other strides are free (a query that is
// a transposed view of [B, Q, Hq, D], as transformers produces, is read in place).
// Log-sum-exp values inside the kernels are natural logarithms (flash-attention's convention).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>

#include "check_text.h"

#include <cmath>
#include <initializer_list>

namespace ewe_ext {

struct AttentionShape {
  int64_t B, Hq, Hkv, G, Q, L, N, D;
};

// The op's arguments as the binding receives them (see the table above).
struct AttentionArgs {
  const at::Tensor& query;
  const at::Tensor& key;
  const at::Tensor& value;
  const at::Tensor& mem_key;
  const at::Tensor& mem_value;
  const c10::optional<at::Tensor>& mem_bias;
  const at::Tensor& log_ctx_weight;
  const c10::optional<at::Tensor>& ctx_bias;
  double scale;
};

inline void check_last_dim_contiguous(const at::Tensor& t, const char* name) {
  TORCH_CHECK(t.numel() == 0 || t.size(-1) <= 1 || t.stride(-1) == 1, "memory_attention: ", name,
              " must have a contiguous last dimension (stride(-1) == 1), got strides ", text(t.strides()));
}

inline void check_same_device(const at::Tensor& t, const at::Tensor& query, const char* name) {
  TORCH_CHECK(t.device() == query.device(), "memory_attention: ", name, " is on ", t.device(),
              " but query is on ", query.device());
}

inline AttentionShape check_memory_attention_args(const AttentionArgs& args, c10::DeviceType device_type,
                                                  std::initializer_list<at::ScalarType> dtypes) {
  const auto& [query, key, value, mem_key, mem_value, mem_bias, log_ctx_weight, ctx_bias, scale] = args;
  TORCH_CHECK(query.device().type() == device_type, "memory_attention: query must be a ", device_type,
              " tensor for this kernel, got ", query.device());
  bool dtype_ok = false;
  for (auto dt : dtypes) dtype_ok = dtype_ok || query.scalar_type() == dt;
  TORCH_CHECK(dtype_ok, "memory_attention: query dtype ", query.scalar_type(), " is not supported on ",
              device_type);
  TORCH_CHECK(query.dim() == 4, "memory_attention: query must be [B, Hq, Q, D], got shape ", text(query.sizes()));
  TORCH_CHECK(key.dim() == 4, "memory_attention: key must be [B, Hkv, L, D], got shape ", text(key.sizes()));
  TORCH_CHECK(mem_key.dim() == 4, "memory_attention: mem_key must be [B, Hkv, N, D], got shape ", text(mem_key.sizes()));

  AttentionShape s;
  s.B = query.size(0);
  s.Hq = query.size(1);
  s.Q = query.size(2);
  s.D = query.size(3);
  s.Hkv = key.size(1);
  s.L = key.size(2);
  s.N = mem_key.size(2);
  TORCH_CHECK(s.Hkv > 0 && s.Hq % s.Hkv == 0, "memory_attention: query heads (", text(s.Hq),
              ") must be a multiple of key heads (", text(s.Hkv), ")");
  s.G = s.Hq / s.Hkv;

  struct Named {
    const at::Tensor& t;
    const char* name;
    int64_t len;
  };
  for (const Named& a : {Named{key, "key", s.L}, Named{value, "value", s.L}, Named{mem_key, "mem_key", s.N},
                         Named{mem_value, "mem_value", s.N}}) {
    check_same_device(a.t, query, a.name);
    TORCH_CHECK(a.t.scalar_type() == query.scalar_type(), "memory_attention: ", a.name, " dtype ",
                a.t.scalar_type(), " differs from query dtype ", query.scalar_type());
    TORCH_CHECK(a.t.dim() == 4 && a.t.size(0) == s.B && a.t.size(1) == s.Hkv && a.t.size(2) == a.len &&
                    a.t.size(3) == s.D,
                "memory_attention: ", a.name, " must be [B=", text(s.B), ", Hkv=", text(s.Hkv), ", ", text(a.len),
                ", D=", text(s.D), "], got ", text(a.t.sizes()));
    check_last_dim_contiguous(a.t, a.name);
  }
  check_last_dim_contiguous(query, "query");

  if (mem_bias.has_value()) {
    const at::Tensor& mb = *mem_bias;
    check_same_device(mb, query, "mem_bias");
    TORCH_CHECK(mb.scalar_type() == at::kFloat, "memory_attention: mem_bias must be float32, got ",
                mb.scalar_type());
    TORCH_CHECK(mb.dim() == 4 && mb.size(0) == s.B && mb.size(1) == 1 && mb.size(2) == 1 && mb.size(3) == s.N,
                "memory_attention: mem_bias must be [B=", text(s.B), ", 1, 1, N=", text(s.N), "], got ",
                text(mb.sizes()));
    check_last_dim_contiguous(mb, "mem_bias");
  }

  check_same_device(log_ctx_weight, query, "log_ctx_weight");
  TORCH_CHECK(log_ctx_weight.scalar_type() == at::kFloat, "memory_attention: log_ctx_weight must be float32, got ",
              log_ctx_weight.scalar_type());
  TORCH_CHECK(log_ctx_weight.numel() == s.B && log_ctx_weight.is_contiguous(),
              "memory_attention: log_ctx_weight must be a contiguous [B, 1, 1, 1] or [B] tensor with B=", text(s.B),
              ", got shape ", text(log_ctx_weight.sizes()));

  if (ctx_bias.has_value()) {
    const at::Tensor& cb = *ctx_bias;
    check_same_device(cb, query, "ctx_bias");
    TORCH_CHECK(cb.scalar_type() == at::kFloat, "memory_attention: ctx_bias must be float32, got ",
                cb.scalar_type());
    TORCH_CHECK(cb.dim() == 4 && (cb.size(0) == s.B || cb.size(0) == 1) && cb.size(1) == 1 && cb.size(2) == s.Q &&
                    cb.size(3) == s.L,
                "memory_attention: ctx_bias must be [B=", text(s.B), " or 1, 1, Q=", text(s.Q), ", L=", text(s.L),
                "], got ", text(cb.sizes()));
    check_last_dim_contiguous(cb, "ctx_bias");
  } else {
    TORCH_CHECK(s.Q <= s.L, "memory_attention: ctx_bias=None means causal with the queries at the last Q key "
                "positions, which needs Q <= L; got Q=", text(s.Q), ", L=", text(s.L));
  }
  TORCH_CHECK(std::isfinite(scale), "memory_attention: scale must be finite, got ", text(scale));
  TORCH_CHECK(s.D > 0, "memory_attention: head dim D must be positive");
  return s;
}

// Kernel arguments as raw pointers and strides, shared by the CPU and CUDA kernels.
template <typename scalar_t>
struct Params {
  int64_t B, Hq, Hkv, G, Q, L, N, D;
  float scale;
  const scalar_t* q;
  int64_t q_sb, q_sh, q_sq;
  const scalar_t *k, *v, *mk, *mv;
  int64_t k_sb, k_sh, k_sl, v_sb, v_sh, v_sl;
  int64_t mk_sb, mk_sh, mk_sl, mv_sb, mv_sh, mv_sl;
  const float* mbias;  // nullptr: no memory padding
  int64_t mb_sb;       // mem_bias is contiguous along N (checked)
  const float* logw;   // [B]
  const float* cbias;  // nullptr: causal
  int64_t cb_sb, cb_sq;
  scalar_t* out;       // [B, Q, Hq, D] contiguous
  float* part_out;     // [B*Q*Hq, splits, D] when splits > 1
  float* part_lse;     // [B*Q*Hq, splits]
  int64_t q_block, n_qblocks, splits;
};

// Fill Params from checked tensors (check_memory_attention_args ran first).
template <typename scalar_t>
Params<scalar_t> make_params(const AttentionArgs& args, const AttentionShape& s, at::Tensor& out) {
  const auto& [query, key, value, mem_key, mem_value, mem_bias, log_ctx_weight, ctx_bias, scale] = args;
  Params<scalar_t> p{};
  p.B = s.B, p.Hq = s.Hq, p.Hkv = s.Hkv, p.G = s.G, p.Q = s.Q, p.L = s.L, p.N = s.N, p.D = s.D;
  p.scale = static_cast<float>(scale);
  p.q = query.const_data_ptr<scalar_t>();
  p.q_sb = query.stride(0), p.q_sh = query.stride(1), p.q_sq = query.stride(2);
  p.k = key.const_data_ptr<scalar_t>();
  p.k_sb = key.stride(0), p.k_sh = key.stride(1), p.k_sl = key.stride(2);
  p.v = value.const_data_ptr<scalar_t>();
  p.v_sb = value.stride(0), p.v_sh = value.stride(1), p.v_sl = value.stride(2);
  p.mk = mem_key.const_data_ptr<scalar_t>();
  p.mk_sb = mem_key.stride(0), p.mk_sh = mem_key.stride(1), p.mk_sl = mem_key.stride(2);
  p.mv = mem_value.const_data_ptr<scalar_t>();
  p.mv_sb = mem_value.stride(0), p.mv_sh = mem_value.stride(1), p.mv_sl = mem_value.stride(2);
  if (mem_bias.has_value() && s.N > 0) {
    p.mbias = mem_bias->const_data_ptr<float>();
    p.mb_sb = mem_bias->stride(0);
  }
  p.logw = log_ctx_weight.const_data_ptr<float>();
  if (ctx_bias.has_value()) {
    p.cbias = ctx_bias->const_data_ptr<float>();
    p.cb_sb = ctx_bias->size(0) == 1 ? 0 : ctx_bias->stride(0);
    p.cb_sq = ctx_bias->stride(2);
  }
  p.out = out.mutable_data_ptr<scalar_t>();
  return p;
}

}  // namespace ewe_ext
