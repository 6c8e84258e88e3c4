"""ewe: Explicit Working Memory for factual long-form generation.

The compiled extension (csrc/) is built separately with `make ext`; a plain
`pip install -e .` installs the pure-Python package, which runs on the PyTorch path.

Extension build (opt-in): `python setup.py build_ext --inplace` compiles csrc/ into
ewe/_C*.so (or EWE_BUILD_EXT=1 with any setup command, e.g.
`EWE_BUILD_EXT=1 pip install --no-build-isolation -e .`: the build needs the installed torch).
It builds the CUDA kernels too when nvcc is found and torch is a CUDA build, else CPU only,
and says which. Knobs: EWE_EXT_CUDA=0 forces CPU only; EWE_EXT_MARCH sets -march (default
"native": the binary is for the machine that builds it; e.g. "x86-64-v3" for a portable one,
"" for none). Needs GCC >= 12 or Clang.
"""
import os
import shutil
import sys

from setuptools import find_packages, setup


def _extension_requested() -> bool:
    return os.environ.get("EWE_BUILD_EXT", "0") == "1" or "build_ext" in sys.argv[1:]


def _extension_setup() -> dict:
    """ext_modules and cmdclass for the compiled memory attention (imports torch only here)."""
    import torch
    from torch.utils.cpp_extension import CUDA_HOME, BuildExtension, CppExtension, CUDAExtension

    nvcc = shutil.which("nvcc") or (os.path.join(CUDA_HOME, "bin", "nvcc") if CUDA_HOME else None)
    if nvcc and not os.path.exists(nvcc):
        nvcc = None
    use_cuda = os.environ.get("EWE_EXT_CUDA", "1") != "0"
    if not use_cuda:
        print("ewe extension: EWE_EXT_CUDA=0: building CPU only")
    elif nvcc is None:
        print("ewe extension: nvcc not found: building CPU only")
    elif torch.version.cuda is None:
        print(f"ewe extension: nvcc found at {nvcc}, but torch {torch.__version__} is a CPU build: building CPU only")
        use_cuda = False
    else:
        print(f"ewe extension: nvcc found at {nvcc}, torch {torch.__version__} (CUDA {torch.version.cuda}): "
              "building CPU + CUDA")
    use_cuda = use_cuda and nvcc is not None and torch.version.cuda is not None

    march = os.environ.get("EWE_EXT_MARCH", "native")
    cxx = ["-O3", "-g0", "-fopenmp", "-ffp-contract=fast"] + ([f"-march={march}"] if march else [])
    sources = ["csrc/ops.cpp", "csrc/cpu/memory_attention.cpp", "csrc/cpu/int8_linear.cpp"]
    kwargs = {"extra_compile_args": {"cxx": cxx}, "extra_link_args": ["-fopenmp"]}
    if use_cuda:
        sources.append("csrc/cuda/memory_attention.cu")
        kwargs["extra_compile_args"]["nvcc"] = ["-O3", "--use_fast_math"]
        ext = CUDAExtension("ewe._C", sources, **kwargs)
    else:
        ext = CppExtension("ewe._C", sources, **kwargs)
    print(f"ewe extension: compiling {', '.join(sources)} with {' '.join(cxx)}")
    return {"ext_modules": [ext], "cmdclass": {"build_ext": BuildExtension}}


def _version() -> str:
    """ewe/version.py's __version__, read without importing the package (it needs torch)."""
    scope: dict = {}
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "ewe", "version.py"), encoding="utf-8") as f:
        exec(f.read(), scope)
    return scope["__version__"]


setup(
    name="ewe",
    version=_version(),
    description="Explicit Working Memory: memory-augmented attention and a fact-checking "
    "controller for factual long-form generation",
    packages=find_packages(include=["ewe", "ewe.*"]),
    python_requires=">=3.10",
    install_requires=[
        "torch==2.13.0",
        "transformers==5.23.0",
        "gguf>=0.17",
        "accelerate>=1.0",
        "safetensors>=0.4",
        "peft>=0.21",  # the memory adapter's LoRA (ewe/memory/adapter.py, `ewe train memory`)
        "sentence-transformers>=5.0",
        "faiss-cpu>=1.8",
        "numpy>=1.26",
        "pydantic>=2.6",
        "pyyaml>=6.0",
        "tqdm>=4.66",
        "pysbd>=0.3.4",
        "spacy>=3.8,<3.9",  # the scorer's atomic claims (ewe/eval/atomic_facts.py): a dependency parse, not the loop's rules
        "matplotlib>=3.8",
        "jinja2>=3.1",
        "fastapi>=0.110",  # `ewe serve` (ewe/serving/)
        "uvicorn>=0.29",
    ],
    extras_require={"dev": ["pytest>=8", "ninja", "hypothesis>=6", "openai>=1.30", "httpx>=0.27",
                            "langchain-openai>=0.3"],  # a framework client in tests/test_serve_langchain.py
                    "ray": ["ray==2.60.0"]},  # `ewe run --ray`, `ewe eval run --ray`: ewe/ray_pool.py
    entry_points={"console_scripts": ["ewe=ewe.cli:main"]},
    package_data={"ewe": ["py.typed", "judge/weights/*.json", "judge/weights/*/*.json", "judge/weights/*/*.safetensors",
                          "judge/labelled/*.jsonl",
                          "memory/adapters/*/*.json", "memory/adapters/*/*.safetensors"]},
    **(_extension_setup() if _extension_requested() else {}),
)
