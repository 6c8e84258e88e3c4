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

from ewe.bench.attention import (COPY_TARGET_MIN_CTX, TARGETS, impl_copy_fraction, impl_ms, impl_over, row_of,
                                 worst_row)

IMPLS = ("ext", "flash", "best")  # best: the faster of ext and flash on each shape


def _where(row) -> str:
    return f"{row.mode} k={row.k} M={row.M} ctx={row.ctx} B={row.batch}"


def attention_lines(data: dict) -> list[dict]:
    """Per implementation (ext, flash, the faster per shape): the worst row of each of `ewe bench attention`'s
    GPU targets (its TARGETS)."""
    rows = [row_of(r) for r in data["rows"]]
    decode = [r for r in rows if r.mode == "decode"]
    prefill = [r for r in rows if r.mode == "prefill"]
    out = []
    for impl in IMPLS:
        if not any(impl_ms(r, impl) for r in rows):
            continue
        checks = [
            (f"decode {impl}: speed / sdpa's over the concatenated keys", TARGETS["sdpa_over_ext"], decode,
             lambda r: impl_over(r.sdpa_ms, r, impl)),
            (f"decode {impl}: K/V read / device copy bandwidth, ctx >= {COPY_TARGET_MIN_CTX}",
             TARGETS["copy_fraction"], [r for r in decode if r.ctx >= COPY_TARGET_MIN_CTX],
             lambda r: impl_copy_fraction(r, impl)),
            (f"prefill {impl}: speed / the fused path's", TARGETS["prefill_fused_over_ext"], prefill,
             lambda r: impl_over(r.fused_ms, r, impl)),
        ]
        for what, target, candidates, value in checks:
            row, n = worst_row(candidates, value)
            worst = None if row is None else value(row)
            out.append({"target": what, "want": target, "worst": worst, "at": _where(row) if row else None,
                        "rows": n, "met": None if worst is None else worst >= target})
    return out


def e2e_lines(data: dict) -> list[dict]:
    """The targets `ewe bench e2e` checked itself (its TARGETS, on its run with memory units)."""
    out = []
    for name, t in data["targets"].items():
        run, key = name.rsplit(" ", 1)
        out.append({"target": f"{data['layout']} {run}: {key}", "want": t["target"], "worst": t["value"], "at": None,
                    "rows": 1, "met": t["met"]})
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
    sources = {"attention_8b.json": attention_lines, "e2e_8b.json": e2e_lines, "e2e_135m.json": e2e_lines,
               "faiss_devices.json": faiss_lines}
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
