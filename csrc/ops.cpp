// The op schemas, declared once. Implementations register per dispatch key:
// csrc/cpu/memory_attention.cpp (CPU) and csrc/cuda/memory_attention.cu (CUDA, when built
// with nvcc against a CUDA build of torch). Shapes and conventions: csrc/memory_attention.h.
#include <Python.h>
#include <torch/library.h>

extern "C" {
// `import ewe._C` loads this library, whose static initializers register the op with the
// dispatcher; the Python module itself is empty (the op lives at torch.ops.ewe_ext).
PyObject* PyInit__C(void) {
  static struct PyModuleDef module_def = {
      PyModuleDef_HEAD_INIT, "_C", "ewe's compiled memory attention: torch.ops.ewe_ext", -1, nullptr,
  };
  return PyModule_Create(&module_def);
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
}
