// CUDA implementation of ewe_ext::memory_attention (schema in csrc/ops.cpp, shapes and
// conventions in csrc/memory_attention.h). Compiled only when setup.py finds nvcc and a CUDA
// build of torch.
//
// STATUS: memory_attention_kernel and merge_splits_kernel's first version passed the CUDA cases
// of tests/test_extension.py on an H100. decode_kernel and the present merge_splits_kernel are
// compile-checked only (nvcc 13, sm_90, no spills) until those tests run them on a GPU.
//
// Two kernels:
//  - decode_kernel, for one query (Q == 1, a decoding step) with D = 64 or 128, G <= 8 and
//    16-byte aligned rows: split-KV (flash-decoding), built for memory bandwidth; see its
//    comment. Each block takes one (batch row, KV head, slice of the key axis) and all G query
//    heads of that KV head.
//  - memory_attention_kernel, for everything else, in two launch shapes:
//    - few query rows: split-KV. Each block takes one (batch row, KV head, query block) and one
//      slice of the key axis [memory ; context].
//    - prefill: one slice and up to kMaxRows query rows (all heads of a GQA group times a block
//      of queries) per block, writing the output directly.
//    Keys and values go through shared memory in tiles of 32 (one key per lane while scoring),
//    so every key row is read from global memory once per block, for all of the block's rows.
// A split-KV launch writes an (output, log-sum-exp) state per row and slice, which
// merge_splits_kernel combines. Scores, softmax state and accumulators are fp32; LSEs are
// natural logs.
#include "../memory_attention.h"

#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include <cuda_fp16.h>
#include <torch/library.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>

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

// ---------------------------------------------------------------------------------------------
// decode_kernel: one query per (batch row, query head), flash-decoding built for bandwidth.
//
// A decoding step reads every key and value row once and does a few flops per byte, so its
// speed is the memory bandwidth it reaches, and the design is about the loads:
//  - 16-byte loads: a lane reads kVec = 16 / sizeof(scalar_t) elements of a row as one uint4;
//    kLanesPerKey = D / kVec lanes cover a row, so a warp reads kKeysPerWarp = 32 / kLanesPerKey
//    rows at a time (bf16, D = 128: 16 lanes a row, 2 rows a warp).
//  - many loads in flight: per iteration a warp first loads kUnroll such groups of K rows,
//    V rows and biases into registers, then computes on them.
//  - no shared memory and no barrier in the main loop: each warp walks its own share of the
//    split's keys with its own online-softmax state.
//  - each row read once: one block takes one (batch row b, KV head h, split) and all G query
//    heads of that KV head; their queries, pre-scaled, stay in registers (each lane its kVec
//    slice of each of the G rows), and every K/V row loaded serves all G of them.
// Per group of kKeysPerWarp keys, a lane dots its slice with the G queries and the kLanesPerKey
// lanes of the row sum their parts by shuffles; the online softmax rescales once per iteration.
// At the end the kKeysPerWarp lane groups of a warp merge their (m, l, acc) states by shuffles,
// the warps through shared memory, and the block writes one (output, log-sum-exp) state per
// query row: the output itself with one split, else part_out / part_lse for merge_splits_kernel.
// Keys j < N are memory keys, the others context key j - N; a split may hold both.
constexpr int kDecodeWarps = 4;
constexpr int kDecodeThreads = kDecodeWarps * 32;
constexpr int kLoadBytes = 16;            // one uint4 per lane and K or V row
constexpr int kDecodeMaxGroup = 8;        // query heads per KV head (rows held in registers)
constexpr int kDecodeMinSplitKeys = 128;  // a split has at least this many keys (short contexts split less)
constexpr int kDecodeMaxSplits = 256;

template <typename scalar_t>
__device__ __forceinline__ uint4 load16(const scalar_t* ptr) {
  return __ldg(reinterpret_cast<const uint4*>(ptr));
}

// The 16 bytes of r as floats, in memory order.
template <typename scalar_t>
__device__ __forceinline__ void unpack16(const uint4 r, float (&f)[kLoadBytes / sizeof(scalar_t)]) {
  const uint32_t w[4] = {r.x, r.y, r.z, r.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    if constexpr (std::is_same_v<scalar_t, float>) {
      f[i] = __uint_as_float(w[i]);
    } else if constexpr (std::is_same_v<scalar_t, c10::BFloat16>) {  // bf16 is float's top 16 bits
      f[2 * i] = __uint_as_float(w[i] << 16);
      f[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
    } else {
      static_assert(std::is_same_v<scalar_t, c10::Half>, "decode_kernel: float, bfloat16 or half");
      f[2 * i] = __half2float(__ushort_as_half(static_cast<unsigned short>(w[i] & 0xffffu)));
      f[2 * i + 1] = __half2float(__ushort_as_half(static_cast<unsigned short>(w[i] >> 16)));
    }
  }
}

// Blocks per SM that decode_kernel's register budget is set for (ptxas then keeps to 65536 /
// (blocks x kDecodeThreads) registers a thread): with more rows in registers, fewer blocks.
// None of the instantiations spills (nvcc 13, sm_90, -Xptxas -v).
constexpr int decode_blocks_per_sm(int rows) { return rows <= 2 ? 4 : rows <= 4 ? 3 : 2; }

// kRows: G rounded up to 1, 2, 4 or 8 (rows g >= G hold a zero query, computed, never written).
template <typename scalar_t, int D, int kRows>
__global__ void __launch_bounds__(kDecodeThreads, decode_blocks_per_sm(kRows))
    decode_kernel(const Params<scalar_t> p) {
  constexpr int kVec = kLoadBytes / sizeof(scalar_t);   // head-dim elements per lane
  constexpr int kLanesPerKey = D / kVec;                 // lanes reading one K or V row
  constexpr int kKeysPerWarp = 32 / kLanesPerKey;        // rows a warp reads at once
  constexpr int kUnroll = 4;                             // key groups loaded before computing
  constexpr int kWarpStep = kKeysPerWarp * kUnroll;      // keys per warp per iteration
  constexpr int kBlockStep = kDecodeWarps * kWarpStep;   // keys per block per iteration
  static_assert(D % kVec == 0 && kLanesPerKey <= 32 && 32 % kLanesPerKey == 0, "unsupported head dim");

  __shared__ float warp_m[kDecodeWarps][kRows], warp_l[kDecodeWarps][kRows];
  __shared__ float warp_acc[kDecodeWarps][kRows][D];

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int sub = lane / kLanesPerKey;           // which of the warp's kKeysPerWarp rows the lane reads
  const int col = (lane % kLanesPerKey) * kVec;  // the lane's first head-dim element
  const int64_t split = blockIdx.x;
  const int64_t b = blockIdx.y / p.Hkv, h = blockIdx.y % p.Hkv;
  const int G = static_cast<int>(p.G);

  float q[kRows][kVec];
#pragma unroll
  for (int g = 0; g < kRows; ++g) {
    if (g < G) {
      unpack16<scalar_t>(load16(p.q + b * p.q_sb + (h * G + g) * p.q_sh + col), q[g]);
#pragma unroll
      for (int v = 0; v < kVec; ++v) q[g][v] *= p.scale;
    } else {
#pragma unroll
      for (int v = 0; v < kVec; ++v) q[g][v] = 0.f;
    }
  }

  // Online-softmax state of the lane's key group: max logit m, sum of weights l and weighted
  // value slice acc, both relative to exp(base(m)), base(m) = m, or 0 while m = -inf.
  float m[kRows], l[kRows], acc[kRows][kVec];
#pragma unroll
  for (int g = 0; g < kRows; ++g) {
    m[g] = -INFINITY;
    l[g] = 0.f;
#pragma unroll
    for (int v = 0; v < kVec; ++v) acc[g][v] = 0.f;
  }

  // The one query sits at context position L - 1: causal masking hides none of the L keys.
  const int64_t total = p.N + p.L;
  const int64_t per_split = (total + p.splits - 1) / p.splits;
  const int64_t chunk = (per_split + kBlockStep - 1) / kBlockStep * kBlockStep;  // whole block steps
  const int64_t k0 = min(total, split * chunk), k1 = min(total, k0 + chunk);
  const scalar_t* mk = p.mk + b * p.mk_sb + h * p.mk_sh + col;
  const scalar_t* mv = p.mv + b * p.mv_sb + h * p.mv_sh + col;
  const scalar_t* ck = p.k + b * p.k_sb + h * p.k_sh + col;
  const scalar_t* cv = p.v + b * p.v_sb + h * p.v_sh + col;
  const float* mbias = p.mbias ? p.mbias + b * p.mb_sb : nullptr;
  const float* cbias = p.cbias ? p.cbias + b * p.cb_sb : nullptr;  // the query's row (qi = 0)
  const float lw = p.logw[b];

  // The trip count depends on the warp only, so every lane runs every shuffle below.
  for (int64_t j0 = k0 + warp * kWarpStep; j0 < k1; j0 += kBlockStep) {
    uint4 kraw[kUnroll], vraw[kUnroll];
    float bias[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t j = j0 + u * kKeysPerWarp + sub;
      kraw[u] = vraw[u] = make_uint4(0u, 0u, 0u, 0u);
      bias[u] = -INFINITY;  // past the split: weight 0
      if (j < k1) {
        if (j < p.N) {
          kraw[u] = load16(mk + j * p.mk_sl);
          vraw[u] = load16(mv + j * p.mv_sl);
          bias[u] = mbias ? __ldg(mbias + j) : 0.f;
        } else {
          const int64_t c = j - p.N;
          kraw[u] = load16(ck + c * p.k_sl);
          vraw[u] = load16(cv + c * p.v_sl);
          bias[u] = lw + (cbias ? __ldg(cbias + c) : 0.f);
        }
      }
    }

    float s[kUnroll][kRows];  // logits, then weights exp(logit - base)
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      float kf[kVec];
      unpack16<scalar_t>(kraw[u], kf);
#pragma unroll
      for (int g = 0; g < kRows; ++g) {
        float dot = 0.f;
#pragma unroll
        for (int v = 0; v < kVec; ++v) dot = fmaf(q[g][v], kf[v], dot);
#pragma unroll
        for (int o = kLanesPerKey / 2; o > 0; o >>= 1) dot += __shfl_xor_sync(kFullMask, dot, o);
        s[u][g] = dot + bias[u];
      }
    }

#pragma unroll
    for (int g = 0; g < kRows; ++g) {
      float mx = m[g];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) mx = fmaxf(mx, s[u][g]);
      const float base = mx == -INFINITY ? 0.f : mx;                 // nothing visible yet: stays zero
      const float alpha = m[g] == base ? 1.f : __expf(m[g] - base);  // exp(-inf) = 0
      float sum = 0.f;
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        s[u][g] = __expf(s[u][g] - base);
        sum += s[u][g];
      }
      l[g] = l[g] * alpha + sum;
      m[g] = mx;
#pragma unroll
      for (int v = 0; v < kVec; ++v) acc[g][v] *= alpha;
    }

#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      float vf[kVec];
      unpack16<scalar_t>(vraw[u], vf);
#pragma unroll
      for (int g = 0; g < kRows; ++g) {
#pragma unroll
        for (int v = 0; v < kVec; ++v) acc[g][v] = fmaf(s[u][g], vf[v], acc[g][v]);
      }
    }
  }

  // Merge the warp's kKeysPerWarp lane groups: lanes lane ^ o (o >= kLanesPerKey) hold the same
  // slice of other keys. Afterwards every lane holds the warp's state for its slice.
#pragma unroll
  for (int o = kLanesPerKey; o < 32; o <<= 1) {
#pragma unroll
    for (int g = 0; g < kRows; ++g) {
      const float m_o = __shfl_xor_sync(kFullMask, m[g], o);
      const float l_o = __shfl_xor_sync(kFullMask, l[g], o);
      const float mx = fmaxf(m[g], m_o);
      const float base = mx == -INFINITY ? 0.f : mx;
      const float a = __expf(m[g] - base), a_o = __expf(m_o - base);
      l[g] = l[g] * a + l_o * a_o;
      m[g] = mx;
#pragma unroll
      for (int v = 0; v < kVec; ++v) acc[g][v] = acc[g][v] * a + __shfl_xor_sync(kFullMask, acc[g][v], o) * a_o;
    }
  }

  // Merge the warps through shared memory; thread idx owns head-dim element d of row g.
  if (sub == 0) {
#pragma unroll
    for (int g = 0; g < kRows; ++g) {
#pragma unroll
      for (int v = 0; v < kVec; ++v) warp_acc[warp][g][col + v] = acc[g][v];
      if (lane == 0) {
        warp_m[warp][g] = m[g];
        warp_l[warp][g] = l[g];
      }
    }
  }
  __syncthreads();
  for (int idx = threadIdx.x; idx < G * D; idx += kDecodeThreads) {
    const int g = idx / D, d = idx % D;
    float mx = -INFINITY;
#pragma unroll
    for (int w = 0; w < kDecodeWarps; ++w) mx = fmaxf(mx, warp_m[w][g]);
    const float base = mx == -INFINITY ? 0.f : mx;
    float sum = 0.f, o = 0.f;
#pragma unroll
    for (int w = 0; w < kDecodeWarps; ++w) {
      const float a = __expf(warp_m[w][g] - base);
      sum += warp_l[w][g] * a;
      o += warp_acc[w][g][d] * a;
    }
    const float inv = sum > 0.f ? 1.f / sum : 0.f;  // a row that sees no key gives zeros
    const int64_t row = b * p.Hq + h * G + g;       // output row, [B, Q = 1, Hq] order
    if (p.splits == 1) {
      p.out[row * D + d] = static_cast<scalar_t>(o * inv);
    } else {
      p.part_out[(row * p.splits + split) * D + d] = o * inv;
      if (d == 0) p.part_lse[row * p.splits + split] = sum > 0.f ? mx + logf(sum) : -INFINITY;
    }
  }
}

// out[row] = sum_s exp(lse_s - lse) * part_out[row, s] with lse = logsumexp_s lse_s: the
// associative merge of attention states over disjoint key sets. One block per output row: warp w
// sums splits w, w + kWarps, ... (lane: elements lane + 32 c; several loads in flight), then the
// warps' sums meet in shared memory.
template <typename scalar_t>
__global__ void __launch_bounds__(kThreads) merge_splits_kernel(const float* part_out, const float* part_lse,
                                                                scalar_t* out, int64_t splits, int64_t D) {
  constexpr int kCols = kMaxHeadDim / 32;
  __shared__ float warp_sum_out[kWarps][kMaxHeadDim];
  const int64_t row = blockIdx.x;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const float* lse = part_lse + row * splits;
  const float* part = part_out + row * splits * D;

  float mx = -INFINITY;
  for (int64_t s = lane; s < splits; s += 32) mx = fmaxf(mx, lse[s]);
  mx = warp_max(mx);
  const float base = mx == -INFINITY ? 0.f : mx;  // every split empty: every weight is 0
  float total = 0.f;
  for (int64_t s = lane; s < splits; s += 32) total += __expf(lse[s] - base);
  total = warp_sum(total);

  float acc[kCols] = {};
#pragma unroll 4
  for (int64_t s = warp; s < splits; s += kWarps) {
    const float w = __expf(lse[s] - base);
#pragma unroll
    for (int c = 0; c < kCols; ++c) {
      const int64_t d = lane + 32 * c;
      if (d < D) acc[c] += w * part[s * D + d];
    }
  }
#pragma unroll
  for (int c = 0; c < kCols; ++c) {
    const int64_t d = lane + 32 * c;
    if (d < D) warp_sum_out[warp][d] = acc[c];
  }
  __syncthreads();
  const float inv = total > 0.f ? 1.f / total : 0.f;
  for (int64_t d = threadIdx.x; d < D; d += kThreads) {
    float o = 0.f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) o += warp_sum_out[w][d];
    out[row * D + d] = static_cast<scalar_t>(o * inv);
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

// With p.splits > 1: part_out / part_lse, pointed to by p (the caller keeps the tensors until
// the launches are queued; the caching allocator frees them in stream order).
template <typename scalar_t>
std::pair<at::Tensor, at::Tensor> alloc_split_states(Params<scalar_t>& p, const AttentionArgs& args,
                                                     const AttentionShape& s) {
  if (p.splits <= 1) return {};
  const auto opts = args.query.options().dtype(at::kFloat);
  at::Tensor part_out = at::empty({s.B * s.Q * s.Hq * p.splits, s.D}, opts);
  at::Tensor part_lse = at::empty({s.B * s.Q * s.Hq * p.splits}, opts);
  p.part_out = part_out.mutable_data_ptr<float>();
  p.part_lse = part_lse.mutable_data_ptr<float>();
  return {part_out, part_lse};
}

template <typename scalar_t>
void launch_merge(const Params<scalar_t>& p, const AttentionShape& s, cudaStream_t stream) {
  merge_splits_kernel<scalar_t><<<static_cast<unsigned>(s.B * s.Q * s.Hq), kThreads, 0, stream>>>(
      p.part_out, p.part_lse, p.out, p.splits, s.D);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// decode_kernel reads rows as 16-byte vectors: the data pointer and the strides of the first
// three dims (those of size > 1) must be multiples of 16 bytes. An empty tensor is never read.
bool rows_16_byte_aligned(const at::Tensor& t) {
  if (t.numel() == 0) return true;
  if (reinterpret_cast<uintptr_t>(t.const_data_ptr()) % kLoadBytes != 0) return false;
  for (int64_t d = 0; d < 3; ++d) {
    if (t.size(d) > 1 && (t.stride(d) * t.element_size()) % kLoadBytes != 0) return false;
  }
  return true;
}

bool decode_kernel_applies(const AttentionArgs& args, const AttentionShape& s) {
  if (s.Q != 1 || (s.D != 64 && s.D != 128) || s.G > kDecodeMaxGroup) return false;
  for (const at::Tensor* t : {&args.query, &args.key, &args.value, &args.mem_key, &args.mem_value}) {
    if (!rows_16_byte_aligned(*t)) return false;
  }
  return true;
}

template <typename scalar_t, int D, int kRows>
void launch_decode_kernel(Params<scalar_t>& p, const AttentionArgs& args, const AttentionShape& s, int sms,
                          cudaStream_t stream) {
  auto kernel = decode_kernel<scalar_t, D, kRows>;
  // Blocks of this kernel an SM holds at once (registers decide), asked once per instantiation:
  // a device of another architecture in the same process only gets a less apt split count.
  static const int resident_per_sm = [&] {
    int n = 0;
    C10_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, kDecodeThreads, 0));
    return std::max(n, 1);
  }();
  // Splits: as many as fill every SM in one wave (no ragged last wave), within
  // [1, kDecodeMaxSplits] and at least kDecodeMinSplitKeys keys each.
  const int64_t heads = s.B * s.Hkv;
  TORCH_CHECK(heads <= 65535, "memory_attention: too many query blocks or batch x heads for one CUDA launch");
  const int64_t by_occupancy = int64_t{resident_per_sm} * sms / heads;
  const int64_t by_length = (s.N + s.L) / kDecodeMinSplitKeys;
  p.splits = std::max<int64_t>(1, std::min({by_occupancy, by_length, int64_t{kDecodeMaxSplits}}));
  p.q_block = 1;
  p.n_qblocks = 1;
  const auto states = alloc_split_states(p, args, s);
  const dim3 grid(static_cast<unsigned>(p.splits), static_cast<unsigned>(heads));
  kernel<<<grid, kDecodeThreads, 0, stream>>>(p);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  if (p.splits > 1) launch_merge(p, s, stream);
}

template <typename scalar_t, int D>
void launch_decode(Params<scalar_t>& p, const AttentionArgs& args, const AttentionShape& s, int sms,
                   cudaStream_t stream) {
  if (s.G == 1) {
    launch_decode_kernel<scalar_t, D, 1>(p, args, s, sms, stream);
  } else if (s.G == 2) {
    launch_decode_kernel<scalar_t, D, 2>(p, args, s, sms, stream);
  } else if (s.G <= 4) {
    launch_decode_kernel<scalar_t, D, 4>(p, args, s, sms, stream);
  } else {
    launch_decode_kernel<scalar_t, D, 8>(p, args, s, sms, stream);
  }
}

template <typename scalar_t>
void launch(const AttentionArgs& args, const AttentionShape& s, at::Tensor& out) {
  Params<scalar_t> p = make_params<scalar_t>(args, s, out);
  int sms = 0;
  C10_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, args.query.get_device()));
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream(args.query.get_device()).stream();
  if (decode_kernel_applies(args, s)) {
    if (s.D == 64) {
      launch_decode<scalar_t, 64>(p, args, s, sms, stream);
    } else {
      launch_decode<scalar_t, 128>(p, args, s, sms, stream);
    }
    return;
  }

  p.q_block = s.Q == 1 ? 1 : std::min<int64_t>(s.Q, std::max<int64_t>(1, kMaxRows / s.G));
  p.n_qblocks = (s.Q + p.q_block - 1) / p.q_block;
  const int64_t blocks = p.n_qblocks * s.B * s.Hkv;
  p.splits = 1;
  if (blocks < 2 * sms) {  // too few blocks to fill the GPU: split the key axis
    const int64_t by_blocks = (2 * sms + blocks - 1) / blocks;
    p.splits = std::max<int64_t>(1, std::min(by_blocks, (s.N + s.L) / kMinKeysPerSplit));
  }
  const auto states = alloc_split_states(p, args, s);
  TORCH_CHECK(p.n_qblocks <= 65535 && s.B * s.Hkv <= 65535,
              "memory_attention: too many query blocks or batch x heads for one CUDA launch");
  if (s.D <= 64) {
    launch_kernel<scalar_t, 2>(p, s.B * s.Hkv, stream);
  } else if (s.D <= 128) {
    launch_kernel<scalar_t, 4>(p, s.B * s.Hkv, stream);
  } else {
    launch_kernel<scalar_t, 8>(p, s.B * s.Hkv, stream);
  }
  if (p.splits > 1) launch_merge(p, s, stream);
}

at::Tensor memory_attention_cuda(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                                 const at::Tensor& mem_key, const at::Tensor& mem_value,
                                 const c10::optional<at::Tensor>& mem_bias, const at::Tensor& log_ctx_weight,
                                 const c10::optional<at::Tensor>& ctx_bias, double scale) {
  const AttentionArgs args{query, key, value, mem_key, mem_value, mem_bias, log_ctx_weight, ctx_bias, scale};
  const AttentionShape s =
      check_memory_attention_args(args, c10::DeviceType::CUDA, {at::kHalf, at::kBFloat16, at::kFloat});
  TORCH_CHECK(s.D <= kMaxHeadDim, "memory_attention: head dim D=", text(s.D), " exceeds the CUDA kernel's ",
              text(int64_t{kMaxHeadDim}));
  TORCH_CHECK(s.G <= kMaxRows, "memory_attention: ", text(s.G), " query heads per key head exceeds the CUDA kernel's ",
              text(int64_t{kMaxRows}));
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
