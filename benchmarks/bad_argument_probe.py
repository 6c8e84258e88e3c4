"""Does a bad argument to the compiled ops raise, or crash the process? For a machine where it crashed.

On one H100 machine (torch 2.11+cu130, extension built there) every call of the raw ops with a
bad argument killed pytest with a segmentation fault instead of raising the TORCH_CHECK's
RuntimeError; the cause is not known (suspects: a C++ ABI or compiler mismatch between the
extension and torch, or two OpenMP runtimes). This script prints the facts that bear on it
(torch, its ABI flag and compiler, g++, the extension's build info, the libraries the extension
links and the ones this process has loaded), then runs each bad-argument case of the tests on
the RAW op (no Python checks in front) in a process of its own and prints

    case: raised RuntimeError: <first line>      or      case: CRASHED (signal N, SIGSEGV)

It needs only torch and this repository (it imports ewe.ops modules alone):

    python benchmarks/bad_argument_probe.py [--device cpu|cuda] [--time-checks]

--device puts the memory_attention cases' tensors there (int8_linear is CPU only: its cases stay
on the CPU); --time-checks also times the Python argument checks on SmolLM2's decode shapes.
tests/test_extension.py and tests/test_linear_kernels.py use CASES and run_cases_in_subprocess.
"""
from __future__ import annotations

import argparse
import glob
import re
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import torch  # noqa: E402


@dataclass(frozen=True)
class Case:
    name: str  # "<op>/<what is wrong>"
    change: Callable[[list, str], None]  # spoils the good arguments in place (args, device)
    message: str  # regex the error must match: the argument's name and what is wrong
    devices: tuple = ("cpu", "cuda")
    build: dict | None = None  # keyword arguments of attention_args, when the case needs other shapes

    @property
    def op(self) -> str:
        return self.name.split("/")[0]


def attention_args(device="cpu", q_len=3, ctx=11, n=7, d=64, hq=4, hkv=2, dtype=torch.float32) -> list:
    """Good arguments of ewe_ext::memory_attention (ewe/ops/extension.py): batch 2, row 1 padded."""
    from ewe.ops.layer_memory import LayerMemory

    gen = torch.Generator().manual_seed(0)
    q = torch.randn(2, hq, q_len, d, generator=gen).to(device, dtype)
    k, v = (torch.randn(2, hkv, ctx, d, generator=gen).to(device, dtype) for _ in range(2))
    mk, mv = (torch.randn(2, hkv, n, d, generator=gen).to(device, dtype) for _ in range(2))
    mb = torch.zeros(2, 1, 1, n)
    mb[1, ..., n - 2:] = float("-inf")
    lw = LayerMemory.context_weight([2, 1])
    return [q, k, v, mk, mv, mb.to(device), lw.to(device), None, 0.125]


def int8_linear_args() -> list:
    """Good arguments of ewe_ext::int8_linear (ewe/ops/quantized_linear.py): 20 outputs, 19 inputs, bias."""
    from ewe.ops.quantized_linear import pack_int8, quantize_int8

    gen = torch.Generator().manual_seed(0)
    weight, bias = torch.randn(20, 19, generator=gen) * 0.05, torch.randn(20, generator=gen)
    return [torch.randn(2, 19, generator=gen), *pack_int8(*quantize_int8(weight)), bias, 20, "auto"]


def _set(i, fn):
    return lambda a, device: a.__setitem__(i, fn(a[i], device))


def _half_all(a, device):
    for i in range(5):
        a[i] = a[i].half()


def _gqa(a, device):
    a[1] = a[1][:, :1].expand(2, 3, 11, 64)
    a[2] = a[1]


def _short_context(a, device):
    a[1], a[2] = a[1][:, :, :2], a[2][:, :, :2]


CASES = [
    Case("memory_attention/dtype", _set(1, lambda t, d: t.double()), "key dtype"),
    Case("memory_attention/shape", _set(4, lambda t, d: t[:, :, :-1]), "mem_value must be"),
    Case("memory_attention/stride", _set(0, lambda t, d: t.transpose(-1, -2).contiguous().transpose(-1, -2)),
         "query must have a contiguous last"),
    Case("memory_attention/bias-dtype", _set(5, lambda t, d: t.double()), "mem_bias must be float32"),
    Case("memory_attention/weight-shape", _set(6, lambda t, d: t[:1]), "log_ctx_weight"),
    Case("memory_attention/ctx-bias-shape", _set(7, lambda t, d: torch.zeros(1, 1, 2, 11, device=d)),
         "ctx_bias must be"),
    Case("memory_attention/causal-q-gt-l", _short_context, "Q <= L"),
    Case("memory_attention/fp16-cpu", _half_all, "not supported", devices=("cpu",)),
    Case("memory_attention/gqa", _gqa, "multiple of key heads"),
    Case("memory_attention/device", _set(1, lambda t, d: t.cpu()), "key is on cpu but query is on cuda",
         devices=("cuda",)),
    Case("memory_attention/cuda-head-dim", lambda a, d: None, "head dim D=264 exceeds", devices=("cuda",),
         build={"d": 264}),
    Case("memory_attention/cuda-group", lambda a, d: None, "17 query heads per key head exceeds",
         devices=("cuda",), build={"hq": 17, "hkv": 1}),
    Case("int8_linear/x-dtype", _set(0, lambda t, d: t.double()), "x must be float32"),
    Case("int8_linear/x-width", _set(0, lambda t, d: t[:, :-4]),
         r"x has K=15 inputs but weight is packed for Kq=5 groups of 4 \(K in 17..20\)"),
    Case("int8_linear/weight-dtype", _set(1, lambda t, d: t.float()), "weight must be a contiguous int8"),
    Case("int8_linear/scale-shape", _set(2, lambda t, d: t[:-1]), "scale must be a contiguous float32"),
    Case("int8_linear/wsum-dtype", _set(3, lambda t, d: t.long()), "wsum must be a contiguous int32"),
    Case("int8_linear/bias-shape", _set(4, lambda t, d: t[:-1]), "bias must be a contiguous float32"),
    Case("int8_linear/out-features", _set(5, lambda t, d: 33), "out_features=33 does not match"),
    Case("int8_linear/isa", _set(6, lambda t, d: "sse9"), r"isa\b.*'sse9'"),
]


def cases(op: str, device: str = "cpu") -> list[Case]:
    """The cases of one op ("memory_attention" or "int8_linear") that are bad arguments on `device`."""
    device = "cpu" if op == "int8_linear" else device
    return [c for c in CASES if c.op == op and device in c.devices]


def case_args(case: Case, device: str = "cpu") -> list:
    """The case's (spoilt) arguments, in the op's order."""
    if case.op == "int8_linear":
        args = int8_linear_args()
    else:
        args = attention_args(device, **(case.build or {}))
    case.change(args, device)
    return args


def raw_op(case: Case):
    """The compiled op itself, with no Python check in front (loading ewe._C registers it)."""
    import ewe._C  # noqa: F401

    return getattr(torch.ops.ewe_ext, case.op)


def run_cases_here(names: list[str], device: str) -> None:
    """Child side: call the raw op on each case in this process, one line each (flushed, so a crash
    shows which case it was)."""
    by_name = {c.name: c for c in CASES}
    for name in names:
        case = by_name[name]
        try:
            raw_op(case)(*case_args(case, device))
            line = "no error"
        except Exception as exc:  # noqa: BLE001 - what it raised is the result
            first = (str(exc).strip().splitlines() or [""])[0]
            line = f"raised {type(exc).__name__}: {first}"
        print(f"{name}: {line}", flush=True)


def run_cases_in_subprocess(names: list[str], device: str = "cpu", timeout: float = 300) -> tuple[int, str]:
    """Parent side: run these cases in one child process; (its return code, stdout + stderr).
    A negative return code is the signal that killed it."""
    proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--run-cases", ",".join(names),
                           "--device", device], capture_output=True, text=True, timeout=timeout, cwd=str(REPO))
    return proc.returncode, proc.stdout + proc.stderr


def raw_op_problems(checked: list[Case], device: str = "cpu") -> list[str]:
    """Run the raw op on these cases in one child process; what went wrong, one line each (none:
    every case raised RuntimeError naming the argument). The tests' second line of checks."""
    rc, out = run_cases_in_subprocess([c.name for c in checked], device)
    results = dict(line.split(": ", 1) for line in out.splitlines() if ": " in line)
    missing = [c.name for c in checked if c.name not in results]
    if rc < 0:
        where = f"on {missing[0]}" if missing else "after the last case"
        return [f"the raw op crashed with signal {-rc} ({signal_name(rc)}) {where}; the child printed:\n{out}"]
    if rc or missing:
        return [f"the child exited {rc} with no result for {missing}:\n{out}"]
    return [f"{c.name}: {results[c.name]} (expected RuntimeError matching {c.message!r})" for c in checked
            if not (results[c.name].startswith("raised RuntimeError: ") and re.search(c.message, results[c.name]))]


def signal_name(returncode: int) -> str:
    """"SIGSEGV" for a child killed by signal 11 (return code -11)."""
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return "?"


def crash_text(returncode: int) -> str:
    """'CRASHED (signal 11, SIGSEGV)' for a negative return code."""
    return f"CRASHED (signal {-returncode}, {signal_name(returncode)})"


def _first_line(cmd: list[str]) -> str:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
        return (out.stdout or out.stderr).strip().splitlines()[0]
    except (OSError, IndexError, subprocess.SubprocessError) as exc:
        return f"({type(exc).__name__}: {exc})"


def _ldd(path: str, pattern: str) -> list[str]:
    try:
        out = subprocess.run(["ldd", path], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        return [f"(ldd failed: {exc})"]
    return [line.strip() for line in out.splitlines() if re.search(pattern, line)]


def print_facts() -> None:
    from ewe.ops import extension

    print("== ABI facts")
    print(f"python: {sys.version.split()[0]} ({sys.executable})")
    print(f"torch: {torch.__version__} (CUDA {torch.version.cuda}), torch._C._GLIBCXX_USE_CXX11_ABI="
          f"{torch._C._GLIBCXX_USE_CXX11_ABI}")
    config = torch.__config__.show()
    compiler = next((ln.strip() for ln in config.splitlines() if re.match(r"\s*- (GCC|Clang|clang|MSVC)", ln)), "?")
    cxx = re.search(r"CXX_COMPILER=([^,]+)", config)
    print(f"torch built with: {compiler}" + (f" ({cxx.group(1)})" if cxx else ""))
    print(f"g++ --version: {_first_line(['g++', '--version'])}")
    if torch.cuda.is_available():
        print(f"GPU: {torch.cuda.get_device_name()}; nvcc: {_first_line(['nvcc', '--version'])}")
    print(f"extension build_info(): {extension.build_info()}")
    print(f"extension available(): {extension.available()}; load_error(): {extension.load_error()}")
    libs = r"libstdc\+\+|libgcc_s|gomp|libc10|libtorch"
    for so in sorted(glob.glob(str(REPO / "ewe" / "_C*.so"))):
        print(f"ldd {Path(so).name}:")
        for line in _ldd(so, libs):
            print(f"  {line}")
    torch_cpu = Path(torch.__file__).parent / "lib" / "libtorch_cpu.so"
    if torch_cpu.exists():
        print("ldd libtorch_cpu.so (its OpenMP and C++ runtime):")
        for line in _ldd(str(torch_cpu), r"libstdc\+\+|libgcc_s|gomp|iomp"):
            print(f"  {line}")
    try:
        maps = Path("/proc/self/maps").read_text()
        loaded = sorted({ln.split()[-1] for ln in maps.splitlines() if re.search(r"libstdc\+\+|gomp|iomp", ln)})
        print("loaded in this process after importing torch and ewe._C (two OpenMP runtimes would show here):")
        for path in loaded:
            print(f"  {path}")
    except OSError:
        pass


def time_checks(repeats: int = 20000) -> None:
    """Microseconds per call of the Python checks on SmolLM2-135M decode shapes (9 query heads,
    3 key heads, head dim 64, one query): what each decode step pays per layer."""
    import timeit

    from ewe.ops import extension, quantized_linear

    print("== Python argument checks, microseconds per call (best of 7)")
    for L, N in ((128, 0), (512, 256), (2048, 1024)):
        q = torch.randn(1, 9, 1, 64)
        k, v = torch.randn(1, 3, L, 64), torch.randn(1, 3, L, 64)
        mk, mv = torch.randn(1, 3, N, 64), torch.randn(1, 3, N, 64)
        args = (q, k, v, mk, mv, torch.zeros(1, 1, 1, N), torch.zeros(1, 1, 1, 1), None, 0.125)
        t = min(timeit.repeat(lambda: extension.check_memory_attention_args(*args), number=repeats, repeat=7))
        line = f"check_memory_attention_args L={L} N={N}: {t / repeats * 1e6:.2f} us"
        if extension.available():
            op = torch.ops.ewe_ext.memory_attention.default
            t_op = min(timeit.repeat(lambda: op(*args), number=max(1, repeats // 20), repeat=3))
            line += f" (the op itself: {t_op / max(1, repeats // 20) * 1e6:.1f} us)"
        print(line)
    x, w, s, ws = torch.randn(1, 576), torch.zeros(36, 144, 16, 4, dtype=torch.int8), torch.ones(576), \
        torch.zeros(576, dtype=torch.int32)
    t = min(timeit.repeat(lambda: quantized_linear.check_int8_linear_args(x, w, s, ws, None, 576, "auto"),
                          number=repeats, repeat=7))
    print(f"check_int8_linear_args (576 x 576): {t / repeats * 1e6:.2f} us")
    t = min(timeit.repeat(lambda: quantized_linear.check_x(x, 576), number=repeats, repeat=7))
    print(f"Int8Linear's per-call check of x: {t / repeats * 1e6:.2f} us")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="cpu", choices=("cpu", "cuda"), help="where the memory_attention cases' "
                    "tensors live (int8_linear's stay on the CPU)")
    ap.add_argument("--time-checks", action="store_true", help="also time the Python argument checks")
    ap.add_argument("--run-cases", help=argparse.SUPPRESS)  # child mode: comma-separated case names
    args = ap.parse_args()
    if args.run_cases:
        run_cases_here(args.run_cases.split(","), args.device)
        return 0
    print_facts()
    print(f"== bad arguments on the RAW ops (device {args.device}), each case in a process of its own")
    crashed = 0
    for case in cases("memory_attention", args.device) + cases("int8_linear"):
        try:
            rc, out = run_cases_in_subprocess([case.name], args.device)
        except subprocess.TimeoutExpired:
            print(f"{case.name}: TIMED OUT", flush=True)
            continue
        lines = [ln for ln in out.splitlines() if ln.startswith(case.name + ": ")]
        if rc < 0:
            crashed += 1
            print(f"{case.name}: {crash_text(rc)}", flush=True)
        elif lines:
            print(lines[0], flush=True)
        else:
            print(f"{case.name}: child exited {rc} without a result: {out.strip().splitlines()[-1:]}", flush=True)
    print(f"== {crashed} case(s) crashed")
    if args.time_checks:
        time_checks()
    return 1 if crashed else 0


if __name__ == "__main__":
    sys.exit(main())
