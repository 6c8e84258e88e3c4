// CUDA implementation of ewe_ext::memory_attention (schema in csrc/ops.cpp, shapes and
// conventions in csrc/memory_attention.h). Compiled only when setup.py finds nvcc and a CUDA
// build of torch.
//
// STATUS: compile-checked with nvcc, never run on a GPU yet. tests/test_extension.py has the
// CUDA cases (they skip without a GPU); run them before trusting this file.
//
// One kernel, two launch shapes:
//  - decode (few query rows): split-KV, flash-decoding style. Each block takes one (batch row,
//    KV head, query block) and one slice of the key axis [memory ; context], and writes an
//    (output, log-sum-exp) state per row; merge_splits_kernel combines the slices.
//  - prefill: the same kernel with one slice and up to kMaxRows query rows (all heads of a GQA
//    group times a block of queries) per block, writing the output directly.
// Keys and values go through shared memory in tiles of 32 (one key per lane while scoring), so
// every key row is read from global memory once per block, for all of the block's rows. Scores,
// softmax state and accumulators are fp32; LSEs are natural logs.
#include "../memory_attention.h"

#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include <torch/library.h>

#include <algorithm>
#include <limits>

namespace ewe_ext {
namespace {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kTileKeys = 32;                       // keys per shared-memory tile: one per lane
constexpr int kRowsPerWarp = 4;                     // query rows (head x query) owned by a warp
constexpr int kMaxRows = kWarps * kRowsPerWarp;     // query rows per block
constexpr int kMaxHeadDim = 256;
constexpr int kMinKeysPerSplit = 128;
constexpr unsigned kFullMask = 0xffffffffu;


__device__ __forceinline__ float warp_max(float x) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) x = fmaxf(x, __shfl_xor_sync(kFullMask, x, o));
  return x;
}

__device__ __forceinline__ float warp_sum(float x) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(kFullMask, x, o);
  return x;
}

template <typename scalar_t>
__device__ __forceinline__ float to_float(scalar_t x) {
  return static_cast<float>(x);
}

// DPL: head-dim elements per lane in the accumulator (ceil(D / 32) rounded up to 2, 4 or 8).
template <typename scalar_t, int DPL>
__global__ void __launch_bounds__(kThreads) memory_attention_kernel(const Params<scalar_t> p) {
  extern __shared__ float smem[];
  const int D = static_cast<int>(p.D);
  const int ldt = D + 1;  // odd row stride: lanes reading different keys hit different banks
  float* Ks = smem;
  float* Vs = Ks + kTileKeys * ldt;
  float* Qs = Vs + kTileKeys * ldt;  // [kMaxRows][D], pre-scaled

  const int64_t split = blockIdx.x, qb = blockIdx.y;
  const int64_t b = blockIdx.z / p.Hkv, h = blockIdx.z % p.Hkv;
  const int64_t q0 = qb * p.q_block;
  const int64_t nq = min(p.q_block, p.Q - q0);
  const int R = static_cast<int>(p.G * nq);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t causal_offset = p.L - p.Q;  // query i sits at context position causal_offset + i

  for (int idx = threadIdx.x; idx < R * D; idx += kThreads) {
    const int r = idx / D, d = idx - r * D;
    const int64_t ql = r / p.G, g = r % p.G;
    Qs[idx] = to_float(p.q[b * p.q_sb + (h * p.G + g) * p.q_sh + (q0 + ql) * p.q_sq + d]) * p.scale;
  }

  float m[kRowsPerWarp], l[kRowsPerWarp], acc[kRowsPerWarp][DPL];
#pragma unroll
  for (int i = 0; i < kRowsPerWarp; ++i) {
    m[i] = -INFINITY;
    l[i] = 0.f;
#pragma unroll
    for (int c = 0; c < DPL; ++c) acc[i][c] = 0.f;
  }

  // With causal masking, context keys past the block's last query are masked for every row.
  const int64_t ctx_end = p.cbias ? p.L : causal_offset + q0 + nq;
  const int64_t total = p.N + ctx_end;
  const int64_t chunk = (total + p.splits - 1) / p.splits;
  const int64_t k0 = min(total, split * chunk), k1 = min(total, k0 + chunk);
  const scalar_t* mk = p.mk + b * p.mk_sb + h * p.mk_sh;
  const scalar_t* mv = p.mv + b * p.mv_sb + h * p.mv_sh;
  const scalar_t* ck = p.k + b * p.k_sb + h * p.k_sh;
  const scalar_t* cv = p.v + b * p.v_sb + h * p.v_sh;
  const float lw = p.logw[b];

  for (int64_t j0 = k0; j0 < k1; j0 += kTileKeys) {
    __syncthreads();  // the previous tile is consumed (and, the first time, Qs is written)
    for (int idx = threadIdx.x; idx < kTileKeys * D; idx += kThreads) {
      const int t = idx / D, d = idx - t * D;
      const int64_t j = j0 + t;
      float kx = 0.f, vx = 0.f;
      if (j < k1) {
        if (j < p.N) {
          kx = to_float(mk[j * p.mk_sl + d]);
          vx = to_float(mv[j * p.mv_sl + d]);
        } else {
          kx = to_float(ck[(j - p.N) * p.k_sl + d]);
          vx = to_float(cv[(j - p.N) * p.v_sl + d]);
        }
      }
      Ks[t * ldt + d] = kx;
      Vs[t * ldt + d] = vx;
    }
    __syncthreads();

    const int64_t j = j0 + lane;  // the key this lane scores
#pragma unroll
    for (int i = 0; i < kRowsPerWarp; ++i) {
      const int r = warp + i * kWarps;
      if (r >= R) continue;  // uniform across the warp
      const int64_t qi = q0 + r / p.G;
      float s = -INFINITY;
      if (j < k1) {
        float dot = 0.f;
        const float* qrow = Qs + r * D;
        const float* krow = Ks + lane * ldt;
        for (int d = 0; d < D; ++d) dot += qrow[d] * krow[d];
        if (j < p.N) {
          s = dot + (p.mbias ? p.mbias[b * p.mb_sb + j] : 0.f);
        } else {
          const int64_t c = j - p.N;
          float add = lw;
          if (p.cbias) {
            add += p.cbias[b * p.cb_sb + qi * p.cb_sq + c];
          } else if (c > causal_offset + qi) {
            add = -INFINITY;
          }
          s = dot + add;
        }
      }
      const float m_new = fmaxf(m[i], warp_max(s));
      const float base = m_new == -INFINITY ? 0.f : m_new;  // a row with nothing visible yet stays at zero
      const float pj = __expf(s - base);                     // exp(-inf) = 0
      const float alpha = m[i] == base ? 1.f : __expf(m[i] - base);
      l[i] = l[i] * alpha + warp_sum(pj);
      m[i] = m_new;
#pragma unroll
      for (int c = 0; c < DPL; ++c) acc[i][c] *= alpha;
      for (int t = 0; t < kTileKeys; ++t) {
        const float pt = __shfl_sync(kFullMask, pj, t);
#pragma unroll
        for (int c = 0; c < DPL; ++c) {
          const int d = lane + 32 * c;
          if (d < D) acc[i][c] += pt * Vs[t * ldt + d];
        }
      }
    }
  }

#pragma unroll
  for (int i = 0; i < kRowsPerWarp; ++i) {
    const int r = warp + i * kWarps;
    if (r >= R) continue;
    const int64_t ql = r / p.G, g = r % p.G;
    const int64_t row = (b * p.Q + q0 + ql) * p.Hq + h * p.G + g;  // output row, [B, Q, Hq] order
    const float inv = l[i] > 0.f ? 1.f / l[i] : 0.f;                 // a row that sees no key gives zeros
#pragma unroll
    for (int c = 0; c < DPL; ++c) {
      const int d = lane + 32 * c;
      if (d >= D) continue;
      if (p.splits == 1) {
        p.out[row * D + d] = static_cast<scalar_t>(acc[i][c] * inv);
      } else {
        p.part_out[(row * p.splits + split) * D + d] = acc[i][c] * inv;
      }
    }
    if (p.splits > 1 && lane == 0) {
      p.part_lse[row * p.splits + split] = l[i] > 0.f ? m[i] + logf(l[i]) : -INFINITY;
    }
  }
}

// out[row] = sum_s exp(lse_s - lse) * part_out[row, s] with lse = logsumexp_s lse_s: the
// associative merge of attention states over disjoint key sets. One block per output row.
template <typename scalar_t>
__global__ void merge_splits_kernel(const float* part_out, const float* part_lse, scalar_t* out, int64_t splits,
                                    int64_t D) {
  const int64_t row = blockIdx.x;
  const float* lse = part_lse + row * splits;
  float mx = -INFINITY;
  for (int64_t s = 0; s < splits; ++s) mx = fmaxf(mx, lse[s]);
  float total = 0.f;
  if (mx != -INFINITY)
    for (int64_t s = 0; s < splits; ++s) total += __expf(lse[s] - mx);
  for (int64_t d = threadIdx.x; d < D; d += blockDim.x) {
    float acc = 0.f;
    if (mx != -INFINITY) {
      for (int64_t s = 0; s < splits; ++s) acc += __expf(lse[s] - mx) * part_out[(row * splits + s) * D + d];
      acc /= total;
    }
    out[row * D + d] = static_cast<scalar_t>(acc);
  }
}

template <typename scalar_t, int DPL>
void launch_kernel(const Params<scalar_t>& p, int64_t n_blocks_z, cudaStream_t stream) {
  const size_t smem = sizeof(float) * (2 * kTileKeys * (p.D + 1) + kMaxRows * p.D);
  auto kernel = memory_attention_kernel<scalar_t, DPL>;
  if (smem > 48 * 1024) {
    C10_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
  }
  const dim3 grid(static_cast<unsigned>(p.splits), static_cast<unsigned>(p.n_qblocks),
                  static_cast<unsigned>(n_blocks_z));
  kernel<<<grid, kThreads, smem, stream>>>(p);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

template <typename scalar_t>
void launch(const AttentionArgs& args, const AttentionShape& s, at::Tensor& out) {
  Params<scalar_t> p = make_params<scalar_t>(args, s, out);

  p.q_block = s.Q == 1 ? 1 : std::min<int64_t>(s.Q, std::max<int64_t>(1, kMaxRows / s.G));
  p.n_qblocks = (s.Q + p.q_block - 1) / p.q_block;
  const int64_t blocks = p.n_qblocks * s.B * s.Hkv;
  int sms = 0;
  C10_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, args.query.get_device()));
  p.splits = 1;
  if (blocks < 2 * sms) {  // too few blocks to fill the GPU: split the key axis
    const int64_t by_blocks = (2 * sms + blocks - 1) / blocks;
    p.splits = std::max<int64_t>(1, std::min(by_blocks, (s.N + s.L) / kMinKeysPerSplit));
  }
  at::Tensor part_out, part_lse;
  if (p.splits > 1) {
    const auto opts = args.query.options().dtype(at::kFloat);
    part_out = at::empty({s.B * s.Q * s.Hq * p.splits, s.D}, opts);
    part_lse = at::empty({s.B * s.Q * s.Hq * p.splits}, opts);
    p.part_out = part_out.mutable_data_ptr<float>();
    p.part_lse = part_lse.mutable_data_ptr<float>();
  }
  TORCH_CHECK(p.n_qblocks <= 65535 && s.B * s.Hkv <= 65535,
              "memory_attention: too many query blocks or batch x heads for one CUDA launch");
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream(args.query.get_device()).stream();
  if (s.D <= 64) {
    launch_kernel<scalar_t, 2>(p, s.B * s.Hkv, stream);
  } else if (s.D <= 128) {
    launch_kernel<scalar_t, 4>(p, s.B * s.Hkv, stream);
  } else {
    launch_kernel<scalar_t, 8>(p, s.B * s.Hkv, stream);
  }
  if (p.splits > 1) {
    merge_splits_kernel<scalar_t><<<static_cast<unsigned>(s.B * s.Q * s.Hq), 128, 0, stream>>>(
        p.part_out, p.part_lse, p.out, p.splits, s.D);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  }
}

at::Tensor memory_attention_cuda(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                                 const at::Tensor& mem_key, const at::Tensor& mem_value,
                                 const c10::optional<at::Tensor>& mem_bias, const at::Tensor& log_ctx_weight,
                                 const c10::optional<at::Tensor>& ctx_bias, double scale) {
  const AttentionArgs args{query, key, value, mem_key, mem_value, mem_bias, log_ctx_weight, ctx_bias, scale};
  const AttentionShape s =
      check_memory_attention_args(args, c10::DeviceType::CUDA, {at::kHalf, at::kBFloat16, at::kFloat});
  TORCH_CHECK(s.D <= kMaxHeadDim, "memory_attention: head dim D=", s.D, " exceeds the CUDA kernel's ", kMaxHeadDim);
  TORCH_CHECK(s.G <= kMaxRows, "memory_attention: ", s.G, " query heads per key head exceeds the CUDA kernel's ",
              kMaxRows);
  c10::cuda::CUDAGuard guard(query.device());
  at::Tensor out = at::empty({s.B, s.Q, s.Hq, s.D}, query.options());
  if (out.numel() == 0) return out;
  switch (query.scalar_type()) {
    case at::kHalf:
      launch<at::Half>(args, s, out);
      break;
    case at::kBFloat16:
      launch<at::BFloat16>(args, s, out);
      break;
    default:
      launch<float>(args, s, out);
  }
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(ewe_ext, CUDA, m) { m.impl("memory_attention", &memory_attention_cuda); }

}  // namespace ewe_ext
