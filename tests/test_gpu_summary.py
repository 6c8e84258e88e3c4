"""benchmarks/gpu_summary.py: issue 60's targets read from the JSON one gpu_check.sh run writes."""
import importlib.util
import json
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "gpu_summary.py"


def _load():
    spec = importlib.util.spec_from_file_location("gpu_summary", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _row(mode, ctx, ext, flash, sdpa=None, fused=1.0, copy=None, flash_copy=None):
    return {"mode": mode, "dtype": "bfloat16", "k": 8, "M": 128, "ctx": ctx, "batch": 1, "ext_ms": ext,
            "flash_ms": flash, "ref_ms": None, "sdpa_ms": sdpa, "fused_ms": fused, "copy_fraction": copy,
            "flash_copy_fraction": flash_copy, "best": "ignored: recomputed"}


def test_summary_reads_each_target_and_names_what_is_missing(tmp_path, capsys):
    (tmp_path / "attention_8b.json").write_text(json.dumps({"rows": [
        _row("decode", 8192, 2.0, 1.0, sdpa=1.5, copy=0.3, flash_copy=0.75),
        _row("decode", 1024, 0.5, 0.8, sdpa=0.6, copy=0.5, flash_copy=0.4),
        _row("prefill", 8192, 4.0, 2.0, fused=3.0)]}))
    (tmp_path / "e2e_8b.json").write_text(json.dumps({"layout": "llama3.1-8b", "targets": {  # as ewe bench e2e checks
        "ewe_k4_static vs_hf": {"target": 5.0, "value": 5.5, "met": True},
        "ewe_k4_static of_limit": {"target": 0.6, "value": 0.55, "met": False}}}))
    (tmp_path / "faiss_devices.json").write_text(json.dumps({"rows": [
        {"factory": "Flat", "device": "cpu", "exact": True},
        {"factory": "Flat", "device": "gpu", "exact": True, "vs_cpu": {"mismatches": 0},
         "gpu_over_cpu_single": 3.0, "gpu_over_cpu_batched": 40.0}]}))
    (tmp_path / "flash_tests.txt").write_text("....\n===== 40 passed, 2 skipped in 31.2s =====\n")
    assert _load().main([str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "tests flash_tests: 40 passed, 2 skipped in 31.2s" in out
    assert "decode ext: speed / sdpa's over the concatenated keys: 0.75 (target 0.9) at worst, decode k=8 M=128 " \
           "ctx=8192 B=1 -> NOT met" in out
    assert "decode best: speed / sdpa's over the concatenated keys: 1.20 (target 0.9)" in out
    assert "decode flash: K/V read / device copy bandwidth, ctx >= 8192: 0.75 (target 0.7)" in out
    assert "prefill best: speed / the fused path's: 1.50 (target 1.0)" in out
    assert "llama3.1-8b ewe_k4_static: vs_hf: 5.50 (target 5.0) -> met" in out
    assert "llama3.1-8b ewe_k4_static: of_limit: 0.55 (target 0.6) -> NOT met" in out
    assert "ewe_k0" not in out  # the targets are about decoding with memory units
    assert "faiss Flat gpu: ranks differing from CPU's beyond ties: 0 (target 0) -> met" in out
    assert "not in " in out and "e2e_135m.json" in out
    saved = json.loads((tmp_path / "gpu_summary.json").read_text())
    assert saved["missing"] == ["e2e_135m.json"] and len(saved["targets"]) == 9 + 2 + 1
