"""The figures of one `benchmarks/gpu_check.sh` run against issue 60's targets, from the JSON it wrote.

    python benchmarks/gpu_summary.py OUT_FOLDER      # prints the summary; writes OUT_FOLDER/gpu_summary.json

Reads what is there (attention_8b.json from `ewe bench attention`, e2e_8b.json and e2e_135m.json from
`ewe bench e2e`, faiss_devices.json from `ewe bench faiss-devices`, and the pytest logs *.txt), says what
is missing, and prints each target with its measured figure and verdict: the lines docs/BENCHMARKS.md
and the README's GPU status are rewritten from.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ATTENTION = {"sdpa": 0.9, "copy": 0.7, "copy_min_ctx": 8192, "prefill": 1.0}  # issue 60
E2E = {"e2e_8b.json": {"vs_hf": 5.0, "of_limit": 0.6}, "e2e_135m.json": {"vs_hf": 10.0}}
IMPLS = ("ext", "flash")


def _ms(row: dict, impl: str):
    if impl != "best":
        return row.get(f"{impl}_ms")
    times = [t for t in (row.get("ext_ms"), row.get("flash_ms")) if t]
    return min(times) if times else None


def _copy(row: dict, impl: str):
    if impl == "best":
        impl = "flash" if _ms(row, "best") == row.get("flash_ms") else "ext"
    return row.get("copy_fraction" if impl == "ext" else "flash_copy_fraction")


def _where(row: dict) -> str:
    return f"{row['mode']} k={row['k']} M={row['M']} ctx={row['ctx']} B={row['batch']}"


def _worst(rows, value):
    scored = [(value(r), r) for r in rows if value(r) is not None]
    return min(scored, key=lambda x: x[0]) if scored else (None, None)


def attention_lines(data: dict) -> list[dict]:
    """Per implementation (ext, flash, the faster per shape): the worst row of each target."""
    rows, out = data["rows"], []
    decode = [r for r in rows if r["mode"] == "decode"]
    prefill = [r for r in rows if r["mode"] == "prefill"]
    for impl in (*IMPLS, "best"):
        if not any(_ms(r, impl) for r in rows):
            continue
        checks = [
            (f"decode {impl}: speed / sdpa's over the concatenated keys", ATTENTION["sdpa"], decode,
             lambda r: r["sdpa_ms"] / _ms(r, impl) if r.get("sdpa_ms") and _ms(r, impl) else None),
            (f"decode {impl}: K/V read / device copy bandwidth, ctx >= {ATTENTION['copy_min_ctx']}", ATTENTION["copy"],
             [r for r in decode if r["ctx"] >= ATTENTION["copy_min_ctx"]], lambda r: _copy(r, impl)),
            (f"prefill {impl}: speed / the fused path's", ATTENTION["prefill"], prefill,
             lambda r: r["fused_ms"] / _ms(r, impl) if _ms(r, impl) else None),
        ]
        for what, target, candidates, value in checks:
            worst, row = _worst(candidates, value)
            out.append({"target": what, "want": target, "worst": worst, "at": _where(row) if row else None,
                        "rows": sum(value(r) is not None for r in candidates),
                        "met": None if worst is None else worst >= target})
    return out


def e2e_lines(name: str, data: dict) -> list[dict]:
    out = []
    for run, figures in data["runs"].items():
        if not run.startswith("ewe_k") or run.startswith("ewe_k0"):
            continue
        for key, target in E2E[name].items():
            value = figures.get(key)
            out.append({"target": f"{data['layout']} {run}: {key}", "want": target, "worst": value, "at": None,
                        "rows": 1, "met": None if value is None else value >= target})
    return out


def faiss_lines(data: dict) -> list[dict]:
    out = []
    for row in data["rows"]:
        if row["device"] == "cpu":
            continue
        compared = row.get("vs_cpu") or {}
        out.append({"target": f"faiss {row['factory']} {row['device']}: ranks differing from CPU's beyond ties"
                              + ("" if row["exact"] else " (approximate index: reported, no target)"),
                    "want": 0, "worst": compared.get("mismatches"), "at": None, "rows": 1,
                    "met": None if not row["exact"] or "mismatches" not in compared else compared["mismatches"] == 0,
                    "gpu_over_cpu_single": row.get("gpu_over_cpu_single"),
                    "gpu_over_cpu_batched": row.get("gpu_over_cpu_batched")})
    return out


def test_counts(folder: Path) -> dict:
    """The last pytest summary line of each log."""
    found = {}
    for log in sorted(folder.glob("*.txt")):
        lines = [line for line in log.read_text(errors="replace").splitlines()
                 if re.search(r"\d+ (passed|failed|error)", line) and " in " in line]
        if lines:
            found[log.stem] = lines[-1].strip("= ")
    return found


def summarize(folder: Path) -> dict:
    summary = {"missing": [], "targets": [], "tests": test_counts(folder)}
    sources = {"attention_8b.json": attention_lines, "e2e_8b.json": lambda d: e2e_lines("e2e_8b.json", d),
               "e2e_135m.json": lambda d: e2e_lines("e2e_135m.json", d), "faiss_devices.json": faiss_lines}
    for name, lines in sources.items():
        path = folder / name
        if not path.exists():
            summary["missing"].append(name)
            continue
        summary["targets"] += lines(json.loads(path.read_text()))
    return summary


def _fmt(x) -> str:
    return "-" if x is None else (f"{x:.2f}" if isinstance(x, float) else str(x))


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or not Path(args[0]).is_dir():
        print("usage: python benchmarks/gpu_summary.py OUT_FOLDER (the folder gpu_check.sh wrote)", file=sys.stderr)
        return 2
    folder = Path(args[0])
    summary = summarize(folder)
    for name, line in summary["tests"].items():
        print(f"tests {name}: {line}")
    for t in summary["targets"]:
        verdict = {True: "met", False: "NOT met", None: "not measured"}[t["met"]]
        print(f"{t['target']}: {_fmt(t['worst'])} (target {t['want']}){' at worst, ' + t['at'] if t['at'] else ''}"
              f" -> {verdict}")
    if summary["missing"]:
        print(f"not in {folder}: {', '.join(summary['missing'])}")
    tmp = folder / "gpu_summary.json.tmp"
    tmp.write_text(json.dumps(summary, indent=1))
    tmp.replace(folder / "gpu_summary.json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
