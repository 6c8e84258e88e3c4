// CPU implementation of ewe_ext::int8_linear, a weight-only int8 linear layer for decoding
// (schema in csrc/ops.cpp; Python side, packing and shapes: ewe/ops/quantized_linear.py).
//
//   y[m, n] = scale[n] * sum_k x[m, k] * q[n, k] + bias[n]
//
//   x      [..., K]          float32; the leading dimensions are rows (M of them)
//   weight [Nb, Kq, 16, 4]   int8, q[n, k] at weight[n / 16, k / 4, n % 16, k % 4]; Nb = ceil(N / 16),
//                            Kq = ceil(K / 4); the padding (n >= N or k >= K) holds zeros
//   scale  [Nb * 16]         float32, per output channel (0 on padding)
//   wsum   [Nb * 16]         int32, sum_k q[n, k] (the VNNI path's offset correction)
//   bias   [N] float32, or None
//   y      [..., N]          float32
//
// A decode step reads every weight once for one to a few rows, so it is bound by memory
// bandwidth: int8 weights read a quarter of float32's bytes. The block layout puts 16 output
// channels x 4 inputs in one 64-byte line, which is what one AVX-512 VNNI vpdpbusd consumes:
// 16 int32 lanes, each the dot product of 4 input bytes with 4 weight bytes, so no horizontal
// sums are needed and a line is read once for all the rows of a call.
//
// Three paths, chosen at run time (cpuid), or forced with `isa`:
//   avx512_vnni  x is quantized per row in two int8 passes, x ~ s * (hi + lo / 254), which keeps
//                about 16 bits of it (relative to the row's largest |x|); vpdpbusd multiplies
//                unsigned by signed bytes, so hi and lo are stored offset by +128 and
//                128 * wsum[n] is subtracted. int32 wrap-around keeps that exact while
//                |sum q_x q_w| < 2^31, i.e. K <= kMaxVnniK. A row holding inf or NaN, or a larger K,
//                takes the exact path below.
//   avx2         exact float32 x: weights widened to float and multiplied-added (FMA).
//   scalar       the same arithmetic in plain C++ (any CPU).
// The AVX2 and AVX-512 functions carry their own target attributes: the build needs no global
// -mavx512 flag, and a binary built for x86-64-v3 still takes the VNNI path where the CPU has it.
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include "../check_text.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#define EWE_X86 1
#include <immintrin.h>
#endif

// GCC 12 warns inside its own AVX-512 headers (_mm512_undefined_* "used uninitialized").
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace ewe_ext {
namespace {

constexpr int64_t kBlock = 16;             // output channels per packed block
constexpr int64_t kQuad = 4;               // inputs per packed group (one int32 lane of vpdpbusd)
constexpr int64_t kLine = kBlock * kQuad;  // bytes of one (block, quad): one cache line
constexpr int64_t kMaxVnniK = 131072;      // 127 * 127 * K < 2^31: the int32 sums stay exact
constexpr float kLoSteps = 254.f;          // lo pass: the hi pass's rounding error in 254 steps
constexpr int64_t kMinBytesPerTask = 1 << 16;  // weights a thread reads at the least (else one thread)

enum class Isa { kScalar, kAvx2, kAvx512Vnni };

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::kAvx512Vnni: return "avx512_vnni";
    case Isa::kAvx2: return "avx2";
    default: return "scalar";
  }
}

Isa best_isa() {
#if EWE_X86
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni"))
    return Isa::kAvx512Vnni;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return Isa::kAvx2;
#endif
  return Isa::kScalar;
}

Isa parse_isa(const std::string& name) {
  static const Isa best = best_isa();
  if (name == "auto") return best;
  Isa want;
  if (name == "avx512_vnni") want = Isa::kAvx512Vnni;
  else if (name == "avx2") want = Isa::kAvx2;
  else if (name == "scalar") want = Isa::kScalar;
  else TORCH_CHECK(false, "int8_linear: isa must be one of auto, avx512_vnni, avx2, scalar; got '", name, "'");
  TORCH_CHECK(static_cast<int>(want) <= static_cast<int>(best), "int8_linear: isa='", name,
              "' is not supported by this CPU (the best it has is ", isa_name(best), ")");
  return want;
}

struct Problem {
  int64_t M, K, Kq, N, Nb;
  const int8_t* w;       // [Nb, Kq, 16, 4]
  const float* scale;    // [Nb * 16]
  const int32_t* wsum;   // [Nb * 16]
  const float* bias;     // [N] or nullptr
  float* y;              // [M, N]
};

inline void finish_block_scalar(const Problem& p, int64_t nb, int64_t m, const float* acc) {
  const int64_t n0 = nb * kBlock, valid = std::min(kBlock, p.N - n0);
  float* y = p.y + m * p.N + n0;
  for (int64_t j = 0; j < valid; ++j) y[j] = acc[j] * p.scale[n0 + j] + (p.bias ? p.bias[n0 + j] : 0.f);
}

// Exact float32 x ([M, Kq * 4], zero padded), plain C++.
void blocks_scalar(const Problem& p, const float* xpad, int64_t nb0, int64_t nb1) {
  const int64_t Kp = p.Kq * kQuad;
  for (int64_t nb = nb0; nb < nb1; ++nb) {
    const int8_t* wb = p.w + nb * p.Kq * kLine;
    for (int64_t m = 0; m < p.M; ++m) {
      const float* xr = xpad + m * Kp;
      float acc[kBlock] = {};
      for (int64_t q = 0; q < p.Kq; ++q) {
        const int8_t* line = wb + q * kLine;
        const float* xq = xr + q * kQuad;
        for (int64_t j = 0; j < kBlock; ++j)
          for (int64_t i = 0; i < kQuad; ++i) acc[j] += xq[i] * static_cast<float>(line[j * kQuad + i]);
      }
      finish_block_scalar(p, nb, m, acc);
    }
  }
}

#if EWE_X86
// Exact float32 x, AVX2 + FMA: 8 bytes (2 outputs x 4 inputs) widened to float per FMA, against
// the quad's 4 inputs broadcast to both halves; partial sums reduced once per block.
__attribute__((target("avx2,fma"))) void blocks_avx2(const Problem& p, const float* xpad, int64_t nb0,
                                                     int64_t nb1) {
  const int64_t Kp = p.Kq * kQuad;
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  for (int64_t nb = nb0; nb < nb1; ++nb) {
    const int8_t* wb = p.w + nb * p.Kq * kLine;
    for (int64_t m = 0; m < p.M; ++m) {
      const float* xr = xpad + m * Kp;
      __m256 acc[8];
      for (auto& a : acc) a = _mm256_setzero_ps();
      for (int64_t q = 0; q < p.Kq; ++q) {
        const __m256 xb = _mm256_broadcast_ps(reinterpret_cast<const __m128*>(xr + q * kQuad));
        const int8_t* line = wb + q * kLine;
        for (int j = 0; j < 8; ++j) {
          const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(line + 8 * j));
          acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b)), xb, acc[j]);
        }
      }
      // acc[j] holds outputs 2j (low half) and 2j+1 (high half), 4 partial sums each.
      float out[kBlock];
      for (int h = 0; h < 2; ++h) {
        const __m256 t01 = _mm256_hadd_ps(acc[4 * h], acc[4 * h + 1]);
        const __m256 t23 = _mm256_hadd_ps(acc[4 * h + 2], acc[4 * h + 3]);
        const __m256 u = _mm256_hadd_ps(t01, t23);  // [o0 o2 o4 o6 | o1 o3 o5 o7] of this half
        _mm256_storeu_ps(out + 8 * h, _mm256_permutevar8x32_ps(u, order));
      }
      finish_block_scalar(p, nb, m, out);
    }
  }
}

// One quad (4 inputs) of one block into the accumulators of slot u: acc[u * R + r] (hi pass) and
// acc[(U + u) * R + r] (lo pass). A function, not a lambda: a lambda does not inherit the target.
template <int R, int U>
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni"), always_inline)) inline void vnni_quad(
    __m512i* acc, int u, const int8_t* wb, const uint8_t* xhr, const uint8_t* xlr, int64_t Kp, int64_t q) {
  const __m512i w = _mm512_loadu_si512(wb + q * kLine);
  for (int r = 0; r < R; ++r) {
    int32_t h4, l4;
    std::memcpy(&h4, xhr + r * Kp + q * kQuad, 4);
    std::memcpy(&l4, xlr + r * Kp + q * kQuad, 4);
    acc[u * R + r] = _mm512_dpbusd_epi32(acc[u * R + r], _mm512_set1_epi32(h4), w);
    acc[(U + u) * R + r] = _mm512_dpbusd_epi32(acc[(U + u) * R + r], _mm512_set1_epi32(l4), w);
  }
}

// R rows x one block of 16 outputs: 2 * U * R int32 accumulators (hi and lo passes; with one
// row, U = 2 interleaved quads so that consecutive vpdpbusd do not wait on each other). One
// block at a time reads the weights as one sequential stream: measured faster here than two
// blocks at once, and than software prefetching.
template <int R>
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni"))) inline void tile_vnni(
    const Problem& p, const uint8_t* xh, const uint8_t* xl, const float* sx, int64_t m0, int64_t nb) {
  constexpr int U = R == 1 ? 2 : 1;
  const int64_t Kp = p.Kq * kQuad;
  const int8_t* wb = p.w + nb * p.Kq * kLine;
  const uint8_t* xhr = xh + m0 * Kp;
  const uint8_t* xlr = xl + m0 * Kp;
  __m512i acc[2 * U * R];  // [pass][u][row], flat: GCC keeps a flat array in registers
  for (auto& a : acc) a = _mm512_setzero_si512();
  int64_t q = 0;
  for (; q + U <= p.Kq; q += U)
    for (int u = 0; u < U; ++u) vnni_quad<R, U>(acc, u, wb, xhr, xlr, Kp, q + u);
  for (; q < p.Kq; ++q) vnni_quad<R, U>(acc, 0, wb, xhr, xlr, Kp, q);

  const int64_t n0 = nb * kBlock, valid = std::min(kBlock, p.N - n0);
  const __mmask16 mask = valid >= kBlock ? __mmask16(0xFFFF) : __mmask16((1u << valid) - 1);
  const __m512i offset = _mm512_slli_epi32(_mm512_loadu_si512(p.wsum + n0), 7);  // 128 * wsum
  const __m512 scale = _mm512_loadu_ps(p.scale + n0);
  const __m512 bias = p.bias ? _mm512_maskz_loadu_ps(mask, p.bias + n0) : _mm512_setzero_ps();
  const __m512 inv_lo = _mm512_set1_ps(1.f / kLoSteps);
  for (int r = 0; r < R; ++r) {
    __m512i hi = acc[r], lo = acc[U * R + r];
    for (int u = 1; u < U; ++u) {
      hi = _mm512_add_epi32(hi, acc[u * R + r]);
      lo = _mm512_add_epi32(lo, acc[(U + u) * R + r]);
    }
    const __m512 dh = _mm512_cvtepi32_ps(_mm512_sub_epi32(hi, offset));
    const __m512 dl = _mm512_cvtepi32_ps(_mm512_sub_epi32(lo, offset));
    const __m512 dot = _mm512_fmadd_ps(dl, inv_lo, dh);
    const __m512 y = _mm512_fmadd_ps(dot, _mm512_mul_ps(scale, _mm512_set1_ps(sx[m0 + r])), bias);
    _mm512_mask_storeu_ps(p.y + (m0 + r) * p.N + n0, mask, y);
  }
}

__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni"))) void blocks_vnni(
    const Problem& p, const uint8_t* xh, const uint8_t* xl, const float* sx, int64_t nb0, int64_t nb1) {
  for (int64_t nb = nb0; nb < nb1; ++nb) {
    int64_t m = 0;
    for (; m + 4 <= p.M; m += 4) tile_vnni<4>(p, xh, xl, sx, m, nb);
    switch (p.M - m) {
      case 3: tile_vnni<3>(p, xh, xl, sx, m, nb); break;
      case 2: tile_vnni<2>(p, xh, xl, sx, m, nb); break;
      case 1: tile_vnni<1>(p, xh, xl, sx, m, nb); break;
      default: break;
    }
  }
}
#endif  // EWE_X86

// x row -> (hi, lo) bytes offset by +128, and its scale s: x ~ s * (hi + lo / 254). False when
// the row holds inf or NaN (it then needs the exact path).
bool quantize_row(const float* x, int64_t K, int64_t Kp, uint8_t* hi, uint8_t* lo, float* s_out) {
  float amax = 0.f;
  for (int64_t k = 0; k < K; ++k) amax = std::max(amax, std::fabs(x[k]));
  if (!std::isfinite(amax)) return false;  // (a NaN makes amax NaN or is skipped: checked below too)
  const float s = amax / 127.f, inv = amax > 0.f ? 127.f / amax : 0.f;
  bool finite = true;
  for (int64_t k = 0; k < K; ++k) {
    finite = finite && !std::isnan(x[k]);
    const float h = std::min(127.f, std::max(-127.f, std::nearbyint(x[k] * inv)));
    const float l = std::min(127.f, std::max(-127.f, std::nearbyint((x[k] - h * s) * (kLoSteps * inv))));
    hi[k] = static_cast<uint8_t>(static_cast<int>(h) + 128);
    lo[k] = static_cast<uint8_t>(static_cast<int>(l) + 128);
  }
  std::memset(hi + K, 128, Kp - K);
  std::memset(lo + K, 128, Kp - K);
  *s_out = s;
  return finite;
}

at::Tensor int8_linear_cpu(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& scale,
                           const at::Tensor& wsum, const c10::optional<at::Tensor>& bias, int64_t out_features,
                           c10::string_view isa_arg) {
  TORCH_CHECK(x.device().is_cpu() && weight.device().is_cpu() && scale.device().is_cpu() &&
                  wsum.device().is_cpu(),
              "int8_linear: x, weight, scale and wsum must be CPU tensors");
  TORCH_CHECK(x.scalar_type() == at::kFloat, "int8_linear: x must be float32, got ", x.scalar_type());
  TORCH_CHECK(x.dim() >= 1, "int8_linear: x must be [..., K], got a 0-d tensor");
  TORCH_CHECK(weight.scalar_type() == at::kChar && weight.dim() == 4 && weight.size(2) == kBlock &&
                  weight.size(3) == kQuad && weight.is_contiguous(),
              "int8_linear: weight must be a contiguous int8 [Nb, Kq, 16, 4] tensor, got ", weight.scalar_type(),
              " ", text(weight.sizes()));
  const int64_t K = x.size(-1), Nb = weight.size(0), Kq = weight.size(1), N = out_features;
  TORCH_CHECK(Kq == (K + kQuad - 1) / kQuad, "int8_linear: x has K=", text(K), " inputs but weight is packed for Kq=",
              text(Kq), " groups of 4 (K in ", text(4 * Kq - 3), "..", text(4 * Kq), ")");
  TORCH_CHECK(N > (Nb - 1) * kBlock && N <= Nb * kBlock, "int8_linear: out_features=", text(N),
              " does not match weight's ", text(Nb), " blocks of 16 outputs");
  TORCH_CHECK(scale.scalar_type() == at::kFloat && scale.dim() == 1 && scale.size(0) == Nb * kBlock &&
                  scale.is_contiguous(),
              "int8_linear: scale must be a contiguous float32 [", text(Nb * kBlock), "] tensor, got ",
              scale.scalar_type(), " ", text(scale.sizes()));
  TORCH_CHECK(wsum.scalar_type() == at::kInt && wsum.dim() == 1 && wsum.size(0) == Nb * kBlock &&
                  wsum.is_contiguous(),
              "int8_linear: wsum must be a contiguous int32 [", text(Nb * kBlock), "] tensor, got ",
              wsum.scalar_type(), " ", text(wsum.sizes()));
  if (bias.has_value()) {
    TORCH_CHECK(bias->device().is_cpu() && bias->scalar_type() == at::kFloat && bias->dim() == 1 &&
                    bias->size(0) == N && bias->is_contiguous(),
                "int8_linear: bias must be a contiguous float32 CPU [", text(N), "] tensor, got ",
                bias->scalar_type(), " ", text(bias->sizes()));
  }
  Isa isa = parse_isa(std::string(isa_arg));

  const at::Tensor xc = x.contiguous();
  std::vector<int64_t> out_shape(x.sizes().begin(), x.sizes().end());
  out_shape.back() = N;
  int64_t M = 1;
  for (size_t d = 0; d + 1 < out_shape.size(); ++d) M *= out_shape[d];
  at::Tensor y = at::empty(out_shape, x.options());
  if (M == 0 || N == 0) return y;
  if (K == 0) {  // an empty sum: y is the bias
    float* out = y.mutable_data_ptr<float>();
    for (int64_t i = 0; i < M * N; ++i) out[i] = bias.has_value() ? bias->const_data_ptr<float>()[i % N] : 0.f;
    return y;
  }

  Problem p{M, K, Kq, N, Nb, weight.const_data_ptr<int8_t>(), scale.const_data_ptr<float>(),
            wsum.const_data_ptr<int32_t>(), bias.has_value() ? bias->const_data_ptr<float>() : nullptr,
            y.mutable_data_ptr<float>()};
  const float* xp = xc.const_data_ptr<float>();
  const int64_t Kp = Kq * kQuad;

  std::vector<uint8_t> xh, xl;
  std::vector<float> sx, xpad;
  if (isa == Isa::kAvx512Vnni && K > kMaxVnniK) isa = best_isa() == Isa::kScalar ? Isa::kScalar : Isa::kAvx2;
  if (isa == Isa::kAvx512Vnni) {
    xh.resize(M * Kp), xl.resize(M * Kp), sx.resize(M);
    for (int64_t m = 0; m < M && isa == Isa::kAvx512Vnni; ++m)
      if (!quantize_row(xp + m * K, K, Kp, xh.data() + m * Kp, xl.data() + m * Kp, sx.data() + m)) isa = Isa::kAvx2;
  }
  if (isa != Isa::kAvx512Vnni) {
    xpad.assign(M * Kp, 0.f);
    for (int64_t m = 0; m < M; ++m) std::memcpy(xpad.data() + m * Kp, xp + m * K, K * sizeof(float));
  }

  // Threads split the output blocks; a layer too small to be worth a second thread runs on one.
  const int64_t grain = std::max<int64_t>(1, kMinBytesPerTask / std::max<int64_t>(1, Kq * kLine));
  at::parallel_for(0, Nb, grain, [&](int64_t nb0, int64_t nb1) {
    switch (isa) {
#if EWE_X86
      case Isa::kAvx512Vnni: blocks_vnni(p, xh.data(), xl.data(), sx.data(), nb0, nb1); break;
      case Isa::kAvx2: blocks_avx2(p, xpad.data(), nb0, nb1); break;
#endif
      default: blocks_scalar(p, xpad.data(), nb0, nb1); break;
    }
  });
  return y;
}

std::string int8_linear_isa_cpu() { return isa_name(best_isa()); }

}  // namespace

TORCH_LIBRARY_IMPL(ewe_ext, CPU, m) { m.impl("int8_linear", &int8_linear_cpu); }
// No tensor arguments: registered as CompositeImplicitAutograd, which is what such ops dispatch to.
TORCH_LIBRARY_IMPL(ewe_ext, CompositeImplicitAutograd, m) { m.impl("int8_linear_isa", &int8_linear_isa_cpu); }

}  // namespace ewe_ext
