// The op schemas, declared once. Implementations register per dispatch key:
// csrc/cpu/memory_attention.cpp (CPU) and csrc/cuda/memory_attention.cu (CUDA, when built
// with nvcc against a CUDA build of torch). Shapes and conventions: csrc/memory_attention.h.
#include <Python.h>
#include <torch/library.h>
#include <torch/version.h>

#include <string>

namespace ewe_ext {
namespace {

#define EWE_STR2(x) #x
#define EWE_STR(x) EWE_STR2(x)

std::string json_string(const char* s) {
  std::string out = "\"";
  for (; *s; ++s) {
    if (*s == '"' || *s == '\\') out += '\\';
    out += *s;
  }
  return out + "\"";
}

// What this library was compiled against, as JSON: ewe/ops/extension.py refuses to use a
// build whose torch version or C++ ABI differs from the running torch's (a mismatch can crash
// rather than raise). CUDA kernels: Python asks the dispatcher instead.
std::string build_info() {
#if defined(__clang__)
  const std::string compiler = "\"clang\": " EWE_STR(__clang_major__) ", \"gcc\": null";
#elif defined(__GNUC__)
  const std::string compiler = "\"clang\": null, \"gcc\": " EWE_STR(__GNUC__);
#else
  const std::string compiler = "\"clang\": null, \"gcc\": null";
#endif
#if defined(_GLIBCXX_USE_CXX11_ABI)
  const std::string abi = EWE_STR(_GLIBCXX_USE_CXX11_ABI);
#else
  const std::string abi = "null";
#endif
#if defined(_OPENMP)
  const std::string openmp = EWE_STR(_OPENMP);  // -fopenmp: the runtime (libgomp) is torch's or the system's
#else
  const std::string openmp = "null";
#endif
  return "{\"torch\": \"" EWE_STR(TORCH_VERSION_MAJOR) "." EWE_STR(TORCH_VERSION_MINOR) "." EWE_STR(
             TORCH_VERSION_PATCH) "\", \"compiler\": " +
         json_string(__VERSION__) + ", " + compiler + ", \"cxx11_abi\": " + abi +
         ", \"openmp\": " + openmp + "}";
}

}  // namespace
}  // namespace ewe_ext

extern "C" {
// `import ewe._C` loads this library, whose static initializers register the op with the
// dispatcher; the Python module itself holds only BUILD_INFO (the op lives at torch.ops.ewe_ext).
// BUILD_INFO is a plain Python string, so the loader can compare it with the running torch
// before calling anything through the dispatcher.
PyObject* PyInit__C(void) {
  static struct PyModuleDef module_def = {
      PyModuleDef_HEAD_INIT, "_C", "ewe's compiled memory attention: torch.ops.ewe_ext", -1, nullptr,
  };
  PyObject* module = PyModule_Create(&module_def);
  if (module != nullptr && PyModule_AddStringConstant(module, "BUILD_INFO", ewe_ext::build_info().c_str()) < 0) {
    Py_DECREF(module);
    return nullptr;
  }
  return module;
}
}

TORCH_LIBRARY(ewe_ext, m) {
  m.def(
      "memory_attention(Tensor query, Tensor key, Tensor value, Tensor mem_key, Tensor mem_value, "
      "Tensor? mem_bias, Tensor log_ctx_weight, Tensor? ctx_bias, float scale) -> Tensor");
  // Weight-only int8 linear for decoding (CPU): csrc/cpu/int8_linear.cpp, ewe/ops/quantized_linear.py.
  m.def("int8_linear(Tensor x, Tensor weight, Tensor scale, Tensor wsum, Tensor? bias, int out_features, "
        "str isa) -> Tensor");
  m.def("int8_linear_isa() -> str");
  m.def("build_info() -> str");
}

// No tensor arguments: CompositeImplicitAutograd, as for int8_linear_isa.
TORCH_LIBRARY_IMPL(ewe_ext, CompositeImplicitAutograd, m) { m.impl("build_info", &ewe_ext::build_info); }
