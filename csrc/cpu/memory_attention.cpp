// CPU implementation of ewe_ext::memory_attention (schema in csrc/ops.cpp, shapes in
// csrc/memory_attention.h).
//
// One pass over the memory keys, then the context keys, with an online softmax (running max,
// running sum, fp32 accumulator; in decode the max may trail the true one by up to kBaseSlack,
// which moves it less often); context logits get + log(k_b + 1). A work item is
// (batch row, KV head, block of queries, key split): all the query heads of a GQA group and
// all the queries of the block are processed together, so each key and value row is read
// once per item. Decode (Q = 1) has few such items, so its key axis is split (flash-decoding)
// and the per-split (output, log-sum-exp) states are merged afterwards; LSEs are natural logs.
//
// The inner loops use 8-lane GCC/Clang vector extensions (plain C++; one AVX2 intrinsic, with
// a portable fallback, widens bfloat16): the compiler maps them to AVX2 or wider with
// -march=native, or to SSE pairs without it. Needs GCC >= 12 or Clang (__builtin_shufflevector).
#include "../memory_attention.h"

#include <ATen/Parallel.h>
#include <ATen/ops/empty.h>
#include <c10/util/BFloat16.h>
#include <torch/library.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace ewe_ext {
namespace {

constexpr int64_t W = 8;                   // lanes of a vf
constexpr int64_t kTile = 64;              // keys per tile (at most)
constexpr int64_t kFewRowsTile = 32;       // keys per tile for few rows (decode): K and V reads alternate finer, and overlap the compute better
constexpr int64_t kPrefetchedTile = 16;    // keys per tile where decode prefetches (bfloat16): one tile's lines stay within what L1 keeps in flight
constexpr int64_t kRowBlock = 16;          // rows per register block in the row-blocked QK kernel
constexpr int64_t kBlockedMinRows = 12;    // from this many rows on, QK is row-blocked (else dot products)
constexpr int64_t kRowsPerItem = 48;       // target query rows (heads x queries) per work item in prefill
constexpr int64_t kMinKeysPerSplit = 256;  // decode splits its key axis no finer than this
constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr float kBaseSlack = 8.f;          // decode: how far logits may exceed a row's softmax base (e^8 ~ 3000, far from overflow)

typedef float vf __attribute__((vector_size(32)));
typedef int32_t vi __attribute__((vector_size(32)));
typedef uint32_t vu __attribute__((vector_size(32)));
typedef uint16_t vh __attribute__((vector_size(16)));
typedef float vf4 __attribute__((vector_size(16)));

inline vf load(const float* p) {
  vf v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
inline void store(float* p, vf v) { std::memcpy(p, &v, sizeof(v)); }
inline void store4(float* p, vf4 v) { std::memcpy(p, &v, sizeof(v)); }
inline vf splat(float x) { return vf{x, x, x, x, x, x, x, x}; }
inline float hsum(vf v) {
  vf4 s = __builtin_shufflevector(v, v, 0, 1, 2, 3) + __builtin_shufflevector(v, v, 4, 5, 6, 7);
  s += __builtin_shufflevector(s, s, 2, 3, 0, 1);
  return s[0] + s[1];
}

// exp(x) to a few ulp of float (Cephes' expf polynomial), 8 lanes at a time. Arguments
// below -87 (masked logits are -inf) give exactly 0; NaN stays NaN.
inline vf exp_v(vf x) {
  const vf lo = splat(-87.0f), hi = splat(88.0f);
  const vi under = x < lo;
  x = x < lo ? lo : x;
  x = x > hi ? hi : x;
  const vf shifter = splat(12582912.0f);  // 1.5 * 2^23: adding it rounds to an integer kept in the low bits
  const vf t = x * splat(1.44269504088896341f) + shifter;
  const vf n = t - shifter;
  vf r = x - n * splat(0.693359375f);
  r = r - n * splat(-2.12194440e-4f);
  vf p = splat(1.9875691500e-4f);
  p = p * r + splat(1.3981999507e-3f);
  p = p * r + splat(8.3334519073e-3f);
  p = p * r + splat(4.1665795894e-2f);
  p = p * r + splat(1.6666665459e-1f);
  p = p * r + splat(5.0000001201e-1f);
  vf y = p * (r * r) + r + splat(1.0f);
  const vi pow2n = (((vi)t - (vi)shifter) + 127) << 23;
  y = y * (vf)pow2n;
  return (vf)((vi)y & ~under);
}

inline float to_float(float x) { return x; }
inline float to_float(c10::BFloat16 x) { return static_cast<float>(x); }

// Eight bfloat16 values widened to float (a bfloat16 is the top half of a float's bits).
inline vf bf16x8_to_float(const uint16_t* p) {
#if defined(__AVX2__)  // one widening load and a shift; GCC's generic lowering takes five instructions
  return (vf)_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))), 16);
#else
  vh h;
  std::memcpy(&h, p, sizeof(h));
  return (vf)(__builtin_convertvector(h, vu) << 16);
#endif
}

inline void bf16_row_to_float(const c10::BFloat16* src, float* dst, int64_t D) {
  const uint16_t* s = reinterpret_cast<const uint16_t*>(src);
  int64_t d = 0;
  for (; d + W <= D; d += W) store(dst + d, bf16x8_to_float(s + d));
  for (; d < D; ++d) dst[d] = static_cast<float>(src[d]);
}

// fp32 rows [j0, j0 + T) of a [*, D] matrix with row stride ld: float input is read in place,
// bfloat16 is widened into buf. Returns the first row; *ld_out is the row stride of the result.
template <typename scalar_t>
inline const float* tile_rows(const scalar_t* base, int64_t ld, int64_t j0, int64_t T, int64_t D, float* buf,
                              int64_t* ld_out) {
  if constexpr (std::is_same_v<scalar_t, float>) {
    *ld_out = ld;
    return base + j0 * ld;
  } else {
    for (int64_t t = 0; t < T; ++t) bf16_row_to_float(base + (j0 + t) * ld, buf + t * D, D);
    *ld_out = D;
    return buf;
  }
}

// Asks for `rows` rows of row_bytes each, stride_bytes apart, to be brought into L1 ahead of
// use, one prefetch per cache line they touch.
inline void prefetch_rows(const void* first, int64_t rows, int64_t row_bytes, int64_t stride_bytes) {
  const uintptr_t base = reinterpret_cast<uintptr_t>(first);
  const bool contiguous = stride_bytes == row_bytes;
  const int64_t spans = contiguous ? 1 : rows, span_bytes = contiguous ? rows * row_bytes : row_bytes;
  for (int64_t r = 0; r < spans; ++r) {
    const uintptr_t begin = (base + r * stride_bytes) & ~uintptr_t(63), end = base + r * stride_bytes + span_bytes;
    for (uintptr_t line = begin; line < end; line += 64) __builtin_prefetch(reinterpret_cast<const void*>(line), 0, 3);
  }
}

// An empty asm that claims to change v: the compiler must hold it in a register from here on
// instead of re-reading it from memory at every use. Only where an 8-float vector fits one
// register (AVX's ymm); without AVX (a baseline -march) it is a no-op.
inline void keep_in_register(vf& v) {
#if (defined(__x86_64__) || defined(__i386__)) && defined(__AVX__)
  asm("" : "+x"(v));
#else
  (void)v;
#endif
}

inline vf vmax(vf a, vf b) { return a > b ? a : b; }

// Whether any lane of v, or x, exceeds limit.
inline bool any_above(vf v, float x, float limit) {
#if defined(__AVX2__)
  return x > limit || _mm256_movemask_ps((__m256)(v > splat(limit))) != 0;
#else
  const vi c = v > splat(limit);
  return x > limit || (c[0] | c[1] | c[2] | c[3] | c[4] | c[5] | c[6] | c[7]) != 0;
#endif
}

// The four sums of lanes of a0..a3, as one 4-lane vector.
inline vf4 hsum4(vf a0, vf a1, vf a2, vf a3) {
  const vf h01 = __builtin_shufflevector(a0, a1, 0, 2, 8, 10, 4, 6, 12, 14) +
                 __builtin_shufflevector(a0, a1, 1, 3, 9, 11, 5, 7, 13, 15);
  const vf h23 = __builtin_shufflevector(a2, a3, 0, 2, 8, 10, 4, 6, 12, 14) +
                 __builtin_shufflevector(a2, a3, 1, 3, 9, 11, 5, 7, 13, 15);
  const vf h = __builtin_shufflevector(h01, h23, 0, 2, 8, 10, 4, 6, 12, 14) +
               __builtin_shufflevector(h01, h23, 1, 3, 9, 11, 5, 7, 13, 15);
  return __builtin_shufflevector(h, h, 0, 1, 2, 3) + __builtin_shufflevector(h, h, 4, 5, 6, 7);
}

// Eight keys or values as floats: float read as is, bfloat16 bits (uint16_t) widened.
inline vf load_widened(const float* p) { return load(p); }
inline vf load_widened(const uint16_t* p) { return bf16x8_to_float(p); }
inline float bits_to_float(float x) { return x; }
inline float bits_to_float(uint16_t x) {
  const uint32_t u = static_cast<uint32_t>(x) << 16;
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

// S[r][t] = Qr[r] . K[t][:D8] for rows [r0, r0 + RB) and keys [t, t + KB), over the first D8
// (a multiple of 8) dims: RB * KB independent accumulators (8 or more keep both FMA pipes busy),
// each key chunk loaded once for all RB rows. Keys are float, or bfloat16 bits (uint16_t)
// widened as they are loaded. Inlined into its caller's loop over keys: as a call, the
// epilogue (the horizontal sums) and the call itself cost a third of the block's time at D = 64.
template <int RB, int KB, typename KT>
__attribute__((always_inline)) inline void qk_dots_block(const float* Qr, int64_t r0, const KT* K, int64_t ldk,
                                                         int64_t t, int64_t D, int64_t D8, float* S, int64_t lds) {
  vf acc[RB][KB] = {};
  for (int64_t d = 0; d < D8; d += W) {
    // The RB query chunks are held in registers and each key chunk is widened into one as it
    // is used: RB + KB loads per RB * KB FMAs (folding the query loads into the FMAs instead
    // would take RB * KB + KB loads, more than the load ports sustain beside the FMAs).
    vf q[RB];
#pragma GCC unroll 4
    for (int i = 0; i < RB; ++i) {
      q[i] = load(Qr + (r0 + i) * D + d);
      keep_in_register(q[i]);
    }
#pragma GCC unroll 8
    for (int j = 0; j < KB; ++j) {
      const vf k = load_widened(K + (t + j) * ldk + d);
#pragma GCC unroll 4
      for (int i = 0; i < RB; ++i) acc[i][j] += q[i] * k;
    }
  }
#pragma GCC unroll 4
  for (int i = 0; i < RB; ++i) {
    float* out = S + (r0 + i) * lds + t;
    if constexpr (KB % 4 == 0) {
#pragma GCC unroll 2
      for (int j = 0; j < KB; j += 4) store4(out + j, hsum4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]));
    } else {
#pragma GCC unroll 4
      for (int j = 0; j < KB; ++j) out[j] = hsum(acc[i][j]);
    }
  }
}

// S[r][t] = Qr[r] . K[t] for few rows (decode), S row-major with row stride lds.
template <typename KT>
void qk_dots(const float* Qr, int64_t R, const KT* K, int64_t ldk, int64_t T, int64_t D, float* S, int64_t lds) {
  const int64_t D8 = D / W * W;
  int64_t r = 0;
  for (; r + 4 <= R; r += 4) {
    int64_t t = 0;
    for (; t + 2 <= T; t += 2) qk_dots_block<4, 2, KT>(Qr, r, K, ldk, t, D, D8, S, lds);
    for (; t < T; ++t) qk_dots_block<4, 1, KT>(Qr, r, K, ldk, t, D, D8, S, lds);
  }
  const int64_t rest = R - r;
  int64_t t = 0;
  if (rest == 3) {
    for (; t + 4 <= T; t += 4) qk_dots_block<3, 4, KT>(Qr, r, K, ldk, t, D, D8, S, lds);
    for (; t < T; ++t) qk_dots_block<3, 1, KT>(Qr, r, K, ldk, t, D, D8, S, lds);
  } else if (rest == 2) {
    for (; t + 4 <= T; t += 4) qk_dots_block<2, 4, KT>(Qr, r, K, ldk, t, D, D8, S, lds);
    for (; t < T; ++t) qk_dots_block<2, 1, KT>(Qr, r, K, ldk, t, D, D8, S, lds);
  } else if (rest == 1) {
    for (; t + 8 <= T; t += 8) qk_dots_block<1, 8, KT>(Qr, r, K, ldk, t, D, D8, S, lds);
    for (; t < T; ++t) qk_dots_block<1, 1, KT>(Qr, r, K, ldk, t, D, D8, S, lds);
  }
  if (D8 < D)  // head dims that are not a multiple of 8
    for (int64_t i = 0; i < R; ++i)
      for (int64_t j = 0; j < T; ++j) {
        float x = S[i * lds + j];
        for (int64_t e = D8; e < D; ++e) x += Qr[i * D + e] * bits_to_float(K[j * ldk + e]);
        S[i * lds + j] = x;
      }
}

// S[t][r] = sum_d QT[d][r] * K[t][d] for many rows (prefill): vectorized over 16 rows at a
// time, six keys per pass, so the accumulators stay in registers and nothing is reduced
// across lanes. Rp is a multiple of kRowBlock (rows past R are zero queries).
void qk_blocked(const float* QT, int64_t Rp, const float* K, int64_t ldk, int64_t T, int64_t D, float* S) {
  int64_t t = 0;
  for (; t + 6 <= T; t += 6) {
    const float* k0 = K + t * ldk;
    for (int64_t rb = 0; rb < Rp; rb += kRowBlock) {
      vf a[6][2] = {};
      const float* q = QT + rb;
      for (int64_t d = 0; d < D; ++d, q += Rp) {
        vf qa = load(q), qb = load(q + W);
        keep_in_register(qa);  // folded into each of the six FMAs, it would be loaded six times
        keep_in_register(qb);
#pragma GCC unroll 6
        for (int j = 0; j < 6; ++j) {
          const vf x = splat(k0[j * ldk + d]);
          a[j][0] += qa * x;
          a[j][1] += qb * x;
        }
      }
      float* s = S + t * Rp + rb;
#pragma GCC unroll 6
      for (int j = 0; j < 6; ++j) {
        store(s + j * Rp, a[j][0]);
        store(s + j * Rp + W, a[j][1]);
      }
    }
  }
  for (; t < T; ++t) {
    const float* k0 = K + t * ldk;
    for (int64_t rb = 0; rb < Rp; rb += kRowBlock) {
      vf a0{}, b0{};
      const float* q = QT + rb;
      for (int64_t d = 0; d < D; ++d, q += Rp) {
        const vf x = splat(k0[d]);
        a0 += load(q) * x;
        b0 += load(q + W) * x;
      }
      store(S + t * Rp + rb, a0);
      store(S + t * Rp + rb + W, b0);
    }
  }
}

// acc[r] += sum_t P(t, r) * V[t] for r < R, with P(t, r) = P[t * pt + r * pr]; 64 output
// columns at a time stay in registers.
void pv_accumulate(float* acc, const float* P, int64_t pt, int64_t pr, int64_t R, const float* V, int64_t ldv,
                   int64_t T, int64_t D) {
  for (int64_t r = 0; r < R; ++r) {
    float* a = acc + r * D;
    const float* pr_ = P + r * pr;
    int64_t d = 0;
    for (; d + 8 * W <= D; d += 8 * W) {
      vf x0 = load(a + d), x1 = load(a + d + W), x2 = load(a + d + 2 * W), x3 = load(a + d + 3 * W);
      vf x4 = load(a + d + 4 * W), x5 = load(a + d + 5 * W), x6 = load(a + d + 6 * W), x7 = load(a + d + 7 * W);
      for (int64_t t = 0; t < T; ++t) {
        const vf p = splat(pr_[t * pt]);
        const float* v = V + t * ldv + d;
        x0 += p * load(v);
        x1 += p * load(v + W);
        x2 += p * load(v + 2 * W);
        x3 += p * load(v + 3 * W);
        x4 += p * load(v + 4 * W);
        x5 += p * load(v + 5 * W);
        x6 += p * load(v + 6 * W);
        x7 += p * load(v + 7 * W);
      }
      store(a + d, x0);
      store(a + d + W, x1);
      store(a + d + 2 * W, x2);
      store(a + d + 3 * W, x3);
      store(a + d + 4 * W, x4);
      store(a + d + 5 * W, x5);
      store(a + d + 6 * W, x6);
      store(a + d + 7 * W, x7);
    }
    for (; d + W <= D; d += W) {
      vf x = load(a + d);
      for (int64_t t = 0; t < T; ++t) x += splat(pr_[t * pt]) * load(V + t * ldv + d);
      store(a + d, x);
    }
    for (; d < D; ++d) {
      float x = a[d];
      for (int64_t t = 0; t < T; ++t) x += pr_[t * pt] * V[t * ldv + d];
      a[d] = x;
    }
  }
}

// acc[r0 + i] += sum_t P[(r0 + i) * pr + t] * V[t] for i < RB, over columns from d on in
// chunks of CV * 8 while whole chunks fit; returns where it stopped. Each value chunk is loaded
// (bfloat16 widened in registers) once for the RB rows, whose RB * CV accumulators stay in
// registers (RB * CV + CV + 1 <= 16 ymm).
template <int RB, int CV, typename VT>
int64_t pv_rows(float* acc, const float* P, int64_t pr, int64_t r0, const VT* V, int64_t ldv, int64_t T, int64_t D,
                int64_t d) {
  constexpr int64_t kStep = CV * W;
  for (; d + kStep <= D; d += kStep) {
    vf x[RB][CV];
#pragma GCC unroll 4
    for (int i = 0; i < RB; ++i)
#pragma GCC unroll 4
      for (int c = 0; c < CV; ++c) x[i][c] = load(acc + (r0 + i) * D + d + c * W);
    for (int64_t t = 0; t < T; ++t) {
      vf v[CV];
#pragma GCC unroll 4
      for (int c = 0; c < CV; ++c) v[c] = load_widened(V + t * ldv + d + c * W);
#pragma GCC unroll 4
      for (int i = 0; i < RB; ++i) {
        const vf p = splat(P[(r0 + i) * pr + t]);
#pragma GCC unroll 4
        for (int c = 0; c < CV; ++c) x[i][c] += p * v[c];
      }
    }
#pragma GCC unroll 4
    for (int i = 0; i < RB; ++i)
#pragma GCC unroll 4
      for (int c = 0; c < CV; ++c) store(acc + (r0 + i) * D + d + c * W, x[i][c]);
  }
  return d;
}

// The same for all D columns: wide chunks first (at least 8 independent accumulators keep both
// FMA pipes busy), then narrower ones, then single columns.
template <int RB, typename VT>
void pv_rows_all(float* acc, const float* P, int64_t pr, int64_t r0, const VT* V, int64_t ldv, int64_t T, int64_t D) {
  constexpr int CV = RB >= 4 ? 2 : RB == 3 ? 3 : 4;
  int64_t d = pv_rows<RB, CV>(acc, P, pr, r0, V, ldv, T, D, 0);
  if constexpr (CV > 2) d = pv_rows<RB, CV - 1>(acc, P, pr, r0, V, ldv, T, D, d);
  if constexpr (CV > 1) d = pv_rows<RB, 1>(acc, P, pr, r0, V, ldv, T, D, d);
  for (; d < D; ++d)
    for (int i = 0; i < RB; ++i) {
      float x = acc[(r0 + i) * D + d];
      for (int64_t t = 0; t < T; ++t) x += P[(r0 + i) * pr + t] * bits_to_float(V[t * ldv + d]);
      acc[(r0 + i) * D + d] = x;
    }
}

// acc[r] += sum_t P[r * pr + t] * V[t] for r < R (decode: the query heads of one KV head),
// values read straight from the cache, once per group of up to four rows.
template <typename VT>
void pv_group(float* acc, const float* P, int64_t pr, int64_t R, const VT* V, int64_t ldv, int64_t T, int64_t D) {
  int64_t r = 0;
  for (; R - r >= 4 && R - r != 6; r += 4) pv_rows_all<4>(acc, P, pr, r, V, ldv, T, D);
  for (; R - r >= 3; r += 3) pv_rows_all<3>(acc, P, pr, r, V, ldv, T, D);
  if (R - r == 2) pv_rows_all<2>(acc, P, pr, r, V, ldv, T, D);
  if (R - r == 1) pv_rows_all<1>(acc, P, pr, r, V, ldv, T, D);
}

// Raw pointers and element strides of every argument.

// Per-thread scratch, sized for the largest work item.
struct Scratch {
  std::vector<float> qbuf, scores, kbuf, vbuf, acc, m, l, base, alpha, tmax;
  Scratch(int64_t rows_padded, int64_t D, bool widen) {
    qbuf.assign(rows_padded * D, 0.f);
    scores.assign(kTile * rows_padded + W, 0.f);
    if (widen) {
      kbuf.resize(kTile * D);
      vbuf.resize(kTile * D);
    }
    acc.resize(rows_padded * D);
    for (auto* v : {&m, &l, &base, &alpha}) v->resize(rows_padded);
    tmax.resize(std::max(rows_padded, kTile));
  }
};

enum class Segment { kMemory, kContext };

template <typename scalar_t>
class WorkItem {
 public:
  WorkItem(const Params<scalar_t>& p, Scratch& s, int64_t index) : p_(p), s_(s) {
    split_ = index % p.splits;
    int64_t rest = index / p.splits;
    h_ = rest % p.Hkv;
    rest /= p.Hkv;
    b_ = rest % p.B;
    // Largest blocks (most causal context) first, so the dynamic schedule ends balanced.
    const int64_t qb = p.n_qblocks - 1 - rest / p.B;
    q0_ = qb * p.q_block;
    nq_ = std::min(p.q_block, p.Q - q0_);
    R_ = p.G * nq_;
    blocked_ = R_ >= kBlockedMinRows;
    Rp_ = blocked_ ? (R_ + kRowBlock - 1) / kRowBlock * kRowBlock : R_;
    causal_offset_ = p.L - p.Q;  // query i sits at context position causal_offset_ + i
    st_ = blocked_ ? Rp_ : 1;
    sr_ = blocked_ ? 1 : kTile;
  }

  void run() {
    const Params<scalar_t>& p = p_;
    load_queries();
    std::fill(s_.acc.begin(), s_.acc.begin() + R_ * p.D, 0.f);
    std::fill(s_.m.begin(), s_.m.begin() + Rp_, kNegInf);
    std::fill(s_.l.begin(), s_.l.begin() + Rp_, 0.f);
    std::fill(s_.base.begin(), s_.base.begin() + Rp_, 0.f);
    // With causal masking, context keys past the block's last query are masked for every row.
    const int64_t ctx_end = p.cbias ? p.L : causal_offset_ + q0_ + nq_;
    const int64_t total = p.N + ctx_end;
    const int64_t chunk = (total + p.splits - 1) / p.splits;
    const int64_t k0 = std::min(total, split_ * chunk), k1 = std::min(total, k0 + chunk);
    if (k0 < std::min(k1, p.N)) segment(Segment::kMemory, k0, std::min(k1, p.N));
    if (std::max(k0, p.N) < k1) segment(Segment::kContext, std::max(k0, p.N) - p.N, k1 - p.N);
    finish();
  }

 private:
  void load_queries() {
    const Params<scalar_t>& p = p_;
    float* qb = s_.qbuf.data();
    if (blocked_) std::fill(qb, qb + Rp_ * p.D, 0.f);
    for (int64_t ql = 0; ql < nq_; ++ql) {
      for (int64_t g = 0; g < p.G; ++g) {
        const int64_t r = ql * p.G + g;
        const scalar_t* src = p.q + b_ * p.q_sb + (h_ * p.G + g) * p.q_sh + (q0_ + ql) * p.q_sq;
        if (blocked_) {
          for (int64_t d = 0; d < p.D; ++d) qb[d * Rp_ + r] = to_float(src[d]) * p.scale;
        } else {
          for (int64_t d = 0; d < p.D; ++d) qb[r * p.D + d] = to_float(src[d]) * p.scale;
        }
      }
    }
  }

  // Scores and probabilities of a tile live in S as S(t, r) = S[t * st_ + r * sr_]: key-major
  // [T][Rp] for the row-blocked kernel, row-major [R][kTile] for the dot-product one. Either
  // way the loops below run along the contiguous axis, 8 lanes at a time.
  void segment(Segment seg, int64_t begin, int64_t end) {
    const Params<scalar_t>& p = p_;
    const bool mem = seg == Segment::kMemory;
    const scalar_t* kb = mem ? p.mk + b_ * p.mk_sb + h_ * p.mk_sh : p.k + b_ * p.k_sb + h_ * p.k_sh;
    const scalar_t* vb = mem ? p.mv + b_ * p.mv_sb + h_ * p.mv_sh : p.v + b_ * p.v_sb + h_ * p.v_sh;
    const int64_t kl = mem ? p.mk_sl : p.k_sl, vl = mem ? p.mv_sl : p.v_sl;
    float* S = s_.scores.data();
    const int64_t row_bytes = p.D * int64_t(sizeof(scalar_t));
    // bfloat16 decode: the tile's values are requested before its scores are computed, the
    // next tile's keys before its values are summed. Measured on Zen 3 (A/B, same machine,
    // keys and values in DRAM as in a model's decode): 20% less time per bfloat16 decode call
    // than without, and 16-key tiles another 7% less than 32 (with keys and values in cache
    // they cost 8% more); float32 gained nothing either way, so it leaves this to the
    // hardware prefetcher and keeps 32-key tiles.
    const bool prefetch = !blocked_ && !std::is_same_v<scalar_t, float>;
    const int64_t tile = blocked_ ? kTile : prefetch ? kPrefetchedTile : kFewRowsTile;
    for (int64_t j0 = begin; j0 < end; j0 += tile) {
      const int64_t T = std::min(tile, end - j0);
      int64_t ldk, ldv;
      if (prefetch) prefetch_rows(vb + j0 * vl, T, row_bytes, vl * int64_t(sizeof(scalar_t)));
      if (blocked_) {
        const float* K = tile_rows(kb, kl, j0, T, p.D, s_.kbuf.data(), &ldk);
        qk_blocked(s_.qbuf.data(), Rp_, K, ldk, T, p.D, S);
      } else if constexpr (std::is_same_v<scalar_t, float>) {
        qk_dots(s_.qbuf.data(), R_, kb + j0 * kl, kl, T, p.D, S, kTile);
      } else {  // bfloat16 keys are widened in registers, each once per block of rows
        qk_dots(s_.qbuf.data(), R_, reinterpret_cast<const uint16_t*>(kb + j0 * kl), kl, T, p.D, S, kTile);
      }
      if (mem) {
        add_memory_bias(S, j0, T);
      } else {
        add_context_bias(S, j0, T);
      }
      softmax_update(S, T);
      if (prefetch && j0 + T < end)
        prefetch_rows(kb + (j0 + T) * kl, std::min(tile, end - j0 - T), row_bytes, kl * int64_t(sizeof(scalar_t)));
      if (blocked_) {
        const float* V = tile_rows(vb, vl, j0, T, p.D, s_.vbuf.data(), &ldv);
        pv_accumulate(s_.acc.data(), S, st_, sr_, R_, V, ldv, T, p.D);
      } else if constexpr (std::is_same_v<scalar_t, float>) {
        pv_group(s_.acc.data(), S, sr_, R_, vb + j0 * vl, vl, T, p.D);
      } else {
        pv_group(s_.acc.data(), S, sr_, R_, reinterpret_cast<const uint16_t*>(vb + j0 * vl), vl, T, p.D);
      }
    }
  }

  // S(t, r) += add[t] for every row r < R_ (rows past R_ in the blocked layout are ignored).
  void add_to_columns(float* S, const float* add, int64_t T) {
    if (blocked_) {
      for (int64_t t = 0; t < T; ++t) {
        const vf x = splat(add[t]);
        float* s = S + t * Rp_;
        for (int64_t r = 0; r < Rp_; r += W) store(s + r, load(s + r) + x);
      }
    } else {
      for (int64_t r = 0; r < R_; ++r)
        for (int64_t t = 0; t < T; ++t) S[r * kTile + t] += add[t];
    }
  }

  void add_memory_bias(float* S, int64_t j0, int64_t T) {
    const Params<scalar_t>& p = p_;
    if (p.mbias) add_to_columns(S, p.mbias + b_ * p.mb_sb + j0, T);  // mem_bias is contiguous along N
  }

  void add_context_bias(float* S, int64_t j0, int64_t T) {
    const Params<scalar_t>& p = p_;
    const float lw = p.logw[b_];
    const int64_t G = p.G;
    float* add = s_.tmax.data();  // scratch of at least kTile floats
    if (!p.cbias && j0 + T - 1 <= causal_offset_ + q0_) {  // the whole tile is visible to every row
      std::fill(add, add + T, lw);
      add_to_columns(S, add, T);
      return;
    }
    for (int64_t ql = 0; ql < nq_; ++ql) {
      if (p.cbias) {
        const float* row = p.cbias + b_ * p.cb_sb + (q0_ + ql) * p.cb_sq + j0;
        for (int64_t t = 0; t < T; ++t) add[t] = lw + row[t];
      } else {
        const int64_t last = causal_offset_ + q0_ + ql - j0;  // the last visible key of this query, in the tile
        for (int64_t t = 0; t < T; ++t) add[t] = t > last ? kNegInf : lw;
      }
      for (int64_t g = 0; g < G; ++g) {
        const int64_t r = ql * G + g;
        for (int64_t t = 0; t < T; ++t) S[t * st_ + r * sr_] += add[t];
      }
    }
  }

  // Online softmax over one tile of logits: rescale each row's running state to its new
  // maximum, replace the logits by exp(logit - max) (the probabilities' numerators) and add
  // their sum to the row's normalizer.
  void softmax_update(float* S, int64_t T) {
    float *l = s_.l.data(), *base = s_.base.data(), *alpha = s_.alpha.data();
    if (blocked_) {
      float* tmax = s_.tmax.data();
      const vf ninf = splat(kNegInf);
      for (int64_t r = 0; r < Rp_; r += W) store(tmax + r, ninf);
      for (int64_t t = 0; t < T; ++t)
        for (int64_t r = 0; r < Rp_; r += W) store(tmax + r, vmax(load(tmax + r), load(S + t * Rp_ + r)));
      for (int64_t r = 0; r < Rp_; ++r) rescale_state(r, tmax[r]);
      for (int64_t t = 0; t < T; ++t) {
        float* s = S + t * Rp_;
        for (int64_t r = 0; r < Rp_; r += W) store(s + r, exp_v(load(s + r) - load(base + r)));
      }
      for (int64_t t = 0; t < T; ++t)
        for (int64_t r = 0; r < Rp_; r += W) store(l + r, load(l + r) + load(S + t * Rp_ + r));
    } else {
      // Few rows (decode): a row's base moves only when a logit exceeds it by more than
      // kBaseSlack, so most tiles skip the horizontal maximum and the rescaling, and their
      // exponentials wait on nothing but the scores.
      const int64_t Tv = T / W * W;
      for (int64_t r = 0; r < R_; ++r) {
        float* s = S + r * kTile;
        vf mx = splat(kNegInf);
        for (int64_t t = 0; t < Tv; t += W) mx = vmax(mx, load(s + t));
        float tail = kNegInf;
        for (int64_t t = Tv; t < T; ++t) tail = std::max(tail, s[t]);
        if (any_above(mx, tail, s_.m[r] + kBaseSlack)) {
          float tmax = std::max(std::max(std::max(mx[0], mx[1]), std::max(mx[2], mx[3])),
                                std::max(std::max(mx[4], mx[5]), std::max(mx[6], mx[7])));
          rescale_state(r, std::max(tmax, tail));
        } else {
          s_.alpha[r] = 1.f;
        }
        const vf b = splat(base[r]);
        vf sum{};
        for (int64_t t = 0; t < Tv; t += W) {
          const vf e = exp_v(load(s + t) - b);
          store(s + t, e);
          sum += e;
        }
        float total = hsum(sum);
        for (int64_t t = Tv; t < T; ++t) total += (s[t] = std::exp(s[t] - base[r]));
        l[r] += total;
      }
    }
    const int64_t D = p_.D;
    for (int64_t r = 0; r < R_; ++r) {
      if (alpha[r] == 1.f) continue;
      float* a = s_.acc.data() + r * D;
      for (int64_t d = 0; d < D; ++d) a[d] *= alpha[r];
    }
  }

  // Moves row r's running max m[r] to include tile_max; base[r] is what the tile's logits are
  // measured from, alpha[r] the factor that rescales the row's earlier sum and accumulator.
  // Between moves, l[r] and the accumulator stay relative to base[r] (finish's LSE: m + log l).
  void rescale_state(int64_t r, float tile_max) {
    float *m = s_.m.data(), *l = s_.l.data();
    const float m_new = std::max(m[r], tile_max);
    const float base = m_new == kNegInf ? 0.f : m_new;  // a row with nothing visible yet stays at zero
    const float alpha = m[r] == base ? 1.f : std::exp(m[r] - base);
    s_.base[r] = base;
    s_.alpha[r] = alpha;
    l[r] *= alpha;
    m[r] = m_new;
  }

  void finish() {
    const Params<scalar_t>& p = p_;
    const int64_t D = p.D;
    for (int64_t r = 0; r < R_; ++r) {
      const int64_t ql = r / p.G, g = r % p.G;
      const int64_t row = (b_ * p.Q + q0_ + ql) * p.Hq + h_ * p.G + g;  // output row, [B, Q, Hq] order
      const float l = s_.l[r];
      const float inv = l > 0.f ? 1.f / l : 0.f;  // a row that sees no key at all gives zeros
      const float* a = s_.acc.data() + r * D;
      if (p.splits == 1) {
        scalar_t* dst = p.out + row * D;
        for (int64_t d = 0; d < D; ++d) dst[d] = static_cast<scalar_t>(a[d] * inv);
      } else {
        float* dst = p.part_out + (row * p.splits + split_) * D;
        for (int64_t d = 0; d < D; ++d) dst[d] = a[d] * inv;
        p.part_lse[row * p.splits + split_] = l > 0.f ? s_.m[r] + std::log(l) : kNegInf;
      }
    }
  }

  const Params<scalar_t>& p_;
  Scratch& s_;
  int64_t split_, h_, b_, q0_, nq_, R_, Rp_, causal_offset_, st_, sr_;
  bool blocked_;
};

// Runs fn(i, thread_state) for i in [0, n) on at::parallel_for's threads, handing out items
// one at a time (work items differ in size under causal masking and key splits).
template <typename MakeState, typename Fn>
void parallel_dynamic(int64_t n, const MakeState& make_state, const Fn& fn) {
  std::atomic<int64_t> next{0};
  const int64_t threads = std::max<int64_t>(1, std::min<int64_t>(at::get_num_threads(), n));
  at::parallel_for(0, threads, 1, [&](int64_t, int64_t) {
    auto state = make_state();
    for (int64_t i = next.fetch_add(1); i < n; i = next.fetch_add(1)) fn(i, state);
  });
}

template <typename scalar_t>
void merge_splits(const Params<scalar_t>& p) {
  const int64_t rows = p.B * p.Q * p.Hq, S = p.splits, D = p.D;
  at::parallel_for(0, rows, 16, [&](int64_t begin, int64_t end) {
    std::vector<float> acc(D), w(S);
    for (int64_t row = begin; row < end; ++row) {
      const float* lse = p.part_lse + row * S;
      float mx = kNegInf;
      for (int64_t s = 0; s < S; ++s) mx = std::max(mx, lse[s]);
      scalar_t* dst = p.out + row * D;
      if (mx == kNegInf) {
        for (int64_t d = 0; d < D; ++d) dst[d] = static_cast<scalar_t>(0.f);
        continue;
      }
      float total = 0.f;
      for (int64_t s = 0; s < S; ++s) total += (w[s] = std::exp(lse[s] - mx));
      std::fill(acc.begin(), acc.end(), 0.f);
      for (int64_t s = 0; s < S; ++s) {
        const float ws = w[s] / total;
        const float* o = p.part_out + (row * S + s) * D;
        for (int64_t d = 0; d < D; ++d) acc[d] += ws * o[d];
      }
      for (int64_t d = 0; d < D; ++d) dst[d] = static_cast<scalar_t>(acc[d]);
    }
  });
}

template <typename scalar_t>
void run_kernel(Params<scalar_t>& p) {
  const int64_t threads = at::get_num_threads();
  p.q_block = p.Q == 1 ? 1 : std::min(p.Q, std::max<int64_t>(1, kRowsPerItem / p.G));
  p.n_qblocks = (p.Q + p.q_block - 1) / p.q_block;
  const int64_t items = p.n_qblocks * p.B * p.Hkv;
  p.splits = 1;
  if (threads > 1 && items < 8 * threads) {  // too few items to keep every thread busy: split the keys
    const int64_t by_items = (8 * threads + items - 1) / items;
    p.splits = std::max<int64_t>(1, std::min(by_items, (p.N + p.L) / kMinKeysPerSplit));
  }
  std::vector<float> part_out, part_lse;
  if (p.splits > 1) {
    part_out.resize(p.B * p.Q * p.Hq * p.splits * p.D);
    part_lse.resize(p.B * p.Q * p.Hq * p.splits);
    p.part_out = part_out.data();
    p.part_lse = part_lse.data();
  }
  const int64_t rows = p.G * p.q_block;
  const int64_t rows_padded = (rows + kRowBlock - 1) / kRowBlock * kRowBlock;
  // Only the row-blocked (prefill) kernels read bfloat16 tiles widened into scratch.
  const bool widen = !std::is_same_v<scalar_t, float> && rows >= kBlockedMinRows;
  parallel_dynamic(
      items * p.splits, [&] { return Scratch(rows_padded, p.D, widen); },
      [&](int64_t i, Scratch& s) { WorkItem<scalar_t>(p, s, i).run(); });
  if (p.splits > 1) merge_splits(p);
}

template <typename scalar_t>
void launch(const AttentionArgs& args, const AttentionShape& s, at::Tensor& out) {
  Params<scalar_t> p = make_params<scalar_t>(args, s, out);
  run_kernel(p);
}

at::Tensor memory_attention_cpu(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                                const at::Tensor& mem_key, const at::Tensor& mem_value,
                                const c10::optional<at::Tensor>& mem_bias, const at::Tensor& log_ctx_weight,
                                const c10::optional<at::Tensor>& ctx_bias, double scale) {
  const AttentionArgs args{query, key, value, mem_key, mem_value, mem_bias, log_ctx_weight, ctx_bias, scale};
  const AttentionShape s = check_memory_attention_args(args, c10::DeviceType::CPU, {at::kFloat, at::kBFloat16});
  at::Tensor out = at::empty({s.B, s.Q, s.Hq, s.D}, query.options());
  if (out.numel() == 0) return out;
  if (query.scalar_type() == at::kFloat) {
    launch<float>(args, s, out);
  } else {
    launch<c10::BFloat16>(args, s, out);
  }
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(ewe_ext, CPU, m) { m.impl("memory_attention", &memory_attention_cpu); }

}  // namespace ewe_ext
