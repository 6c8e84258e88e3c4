"""`ewe bench attention` at other head layouts and batch sizes, its memory budget, its SDPA baseline
and its device-copy baseline; on CPU in seconds (the CUDA smoke test skips without a GPU)."""
from __future__ import annotations

import argparse
import json

import pytest
import torch

from ewe import cli
from ewe.bench import attention as bench
from ewe.ops import extension

TINY = ["--case", "2,8,32", "--repeats", "1", "--layers", "2", "--stream-mb", "4", "--prefill-len", "4",
        "--threads", "1"]


def parse(argv):
    parser = argparse.ArgumentParser()
    bench.add_bench_arguments(parser)
    return parser.parse_args(argv)


def table(out: str) -> list[list[str]]:
    return [line.split() for line in out.splitlines() if line.split()[:1] in (["decode"], ["prefill"])]


def test_rows_follow_the_head_layout_and_batch(monkeypatch, capsys, tmp_path):
    seen = []
    fused = bench.memory_attention_fused

    def spy(query, key, value, memory, mask, scale):  # records the shapes, computes the real thing
        seen.append((tuple(query.shape), tuple(key.shape), tuple(memory.key.shape), scale))
        return fused(query, key, value, memory, mask, scale)

    monkeypatch.setattr(bench, "memory_attention_fused", spy)
    out_json = tmp_path / "rows.json"
    rows = bench.run_attention_bench(parse(["--heads", "4,2,16", "--batch", "1", "2", "--sdpa",
                                            "--json", str(out_json)] + TINY))
    out = capsys.readouterr().out
    assert "head layout (Hq=4, Hkv=2, D=16, B=1 2)" in out
    assert len(rows) == 2 * 2 * 2  # modes x dtypes x batch sizes
    assert {(r.mode, r.dtype, r.batch) for r in rows} == {(m, d, b) for m in ("decode", "prefill")
                                                          for d in ("float32", "bfloat16") for b in (1, 2)}
    for r in rows:
        assert (r.heads, r.kv_heads, r.head_dim) == (4, 2, 16)
        assert r.kv_bytes == 2 * r.batch * 2 * (2 * 8 + 32) * 16 * (4 if r.dtype == "float32" else 2)
        assert r.fused_ms > 0 and r.max_diff is not None
        assert r.layers == (2 if r.mode == "decode" else 1)
        if r.ext_ms and r.mode == "decode":
            assert r.ext_gbps == pytest.approx(r.kv_bytes / (r.ext_ms / 1e3) / 1e9)
    # every call the bench made went through tensors of this layout, scaled by D**-0.5
    for q_shape, k_shape, mem_shape, scale in seen:
        b, q_len = q_shape[0], q_shape[2]
        assert q_shape == (b, 4, q_len, 16) and b in (1, 2) and q_len in (1, 4)
        assert k_shape == (b, 2, 32, 16) and mem_shape == (b, 2, 16, 16)
        assert scale == 16**-0.5
    assert {s[0][0] for s in seen} == {1, 2}
    # the SDPA baseline: timed in decode (CPU's flash kernel takes enable_gqa), never in prefill
    for r in rows:
        if r.mode == "prefill":
            assert r.sdpa_ms is None and r.sdpa_note is None
        else:
            assert (r.sdpa_ms and r.sdpa_ms > 0 and r.sdpa_backend) or ("sdpa: n/a (" in out and r.sdpa_note)
    assert "NOT eq. 1" in out
    # printed: today's columns, then B, sdpa ms, sdpa/ext, copy GB/s, ext/copy, the SDPA kernel, flash ms, flash/copy
    lines = table(out)
    assert len(lines) == 8
    for cols, r in zip(lines, rows):
        assert len(cols) == 29 and cols[17] == cols[21] == cols[24] == cols[26] == "|"
        assert int(cols[18]) == r.batch
        assert cols[22] == cols[23] == "-"  # no device copy on CPU
        assert cols[27] == cols[28] == "-" and r.flash_ms is None  # flash-attention 4 runs on CUDA only
    assert "target (prefill): ext never slower than fused" in out
    if any(r.sdpa_ms and r.ext_ms for r in rows):
        assert "target (decode): ext at >= 0.9x sdpa's speed: worst sdpa/ext" in out
    saved = json.loads(out_json.read_text())
    assert saved["heads"] == [4, 2, 16] and saved["batches"] == [1, 2] and saved["skipped"] == []
    assert [row["batch"] for row in saved["rows"]] == [r.batch for r in rows]
    assert all("sdpa_over_ext" in row and "kv_bytes" in row for row in saved["rows"])


def test_default_layout_prints_todays_columns(capsys):
    rows = bench.run_attention_bench(parse(TINY + ["--dtype", "float32", "--modes", "decode"]))
    out = capsys.readouterr().out
    assert out.startswith("memory attention, one layer call, SmolLM2-135M shapes (Hq=9, Hkv=3, D=64, B=1); ")
    assert [len(cols) for cols in table(out)] == [17]
    assert "sdpa" not in out and "copy" not in out
    assert rows[0].layout == (9, 3, 64) and rows[0].batch == 1


@pytest.mark.parametrize("value, words", [("9,4,64", "multiple of HKV"), ("9,3", "HQ,HKV,D"), ("9,0,64", "at least 1")])
def test_bad_heads_are_refused_naming_the_option(capsys, value, words):
    with pytest.raises(SystemExit):
        cli.main(["bench", "attention", "--heads", value])
    err = capsys.readouterr().err
    assert "--heads" in err and words in err


def test_layout_presets():
    assert bench.resolve_heads(parse([])) == (9, 3, 64)
    assert bench.resolve_heads(parse(["--layout", "llama3-8b"])) == (32, 8, 128)
    assert bench.resolve_heads(parse(["--heads", "32,8,128"])) == bench.LAYOUTS["llama3-8b"]
    with pytest.raises(SystemExit):
        parse(["--layout", "smollm2", "--heads", "4,2,16"])


def test_budget_caps_the_layer_sets_and_skips_what_does_not_fit(capsys, tmp_path):
    # float32 at 4,2,16, k=2 M=8 ctx=32: one set is 12544 bytes (K, V, q), the fused path's scores 2304
    per_set, work = bench.case_bytes((4, 2, 16), 1, 2, 8, 32, 1, 4)
    assert (per_set, work) == (12544, 2304)
    out_json = tmp_path / "rows.json"
    rows = bench.run_attention_bench(parse(TINY + ["--heads", "4,2,16", "--dtype", "float32", "--modes", "decode",
                                                   "--layers", "30", "--batch", "1", "4", "--max-gb", "0.00004",
                                                   "--json", str(out_json)]))
    out = capsys.readouterr().out
    assert [(r.batch, r.layers) for r in rows] == [(1, 3)]  # (40000 - 2304) // 12544 sets fit
    assert "decode float32 k=2 M=8 ctx=32 B=4: skipped: 5.94e-05 GB for one call" in out  # 4 * 12544 + 4 * 2304
    assert json.loads(out_json.read_text())["skipped"][0]["batch"] == 4


def test_reference_skipped_above_its_threshold_outputs_still_checked(capsys):
    rows = bench.run_attention_bench(parse(TINY + ["--heads", "4,2,16", "--dtype", "float32", "--modes", "decode",
                                                   "--reference-max", "100"]))
    assert rows[0].ref_ms is None and "> --reference-max 100" in rows[0].ref_note
    assert rows[0].max_diff is not None  # the extension checked against the fused path
    assert "reference is skipped where B*Hq*(k*M+ctx) > 100" in capsys.readouterr().out


def test_copy_bandwidth_counts_bytes_read_and_written():
    src, dst = bench.copy_buffers("cpu", 1)
    assert src.numel() == 2**20 and bench.copy_bandwidth((src, dst), repeats=2) > 0
    assert torch.equal(src, dst)


def test_sdpa_baseline_is_checked_to_read_the_same_keys():
    layer = bench._make_layers(2, 8, 32, 1, torch.float32, "cpu", 1, (4, 2, 16), batch=2)[0]
    fns, contexts, refused = bench.sdpa_backends(layer, "float32", 16**-0.5)
    assert (fns and set(fns) == set(contexts)) or (not fns and refused)
    if "sdpa:math" in fns:  # only when no fused kernel ran
        assert all(f"{name}:" in refused for name in bench.SDPA_BACKENDS)
    # keys that are not eq. 1's memory and context: every backend's output is refused
    other = layer._replace(key_all=torch.randn_like(layer.key_all))
    fns, _, note = bench.sdpa_backends(other, "float32", 16**-0.5)
    assert not fns and "differs" in note


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_smoke(capsys):
    rows = bench.run_attention_bench(parse(["--device", "cuda", "--heads", "4,2,64", "--case", "2,64,256",
                                            "--batch", "1", "2", "--repeats", "1", "--layers", "2",
                                            "--copy-mb", "16", "--dtype", "bfloat16", "--prefill-len", "4"]))
    out = capsys.readouterr().out
    assert "device copy (dst.copy_(src), 16 MB)" in out and len(rows) == 4
    for r in rows:
        assert r.fused_ms > 0 and r.max_diff is not None
        if r.mode == "decode":
            assert r.copy_gbps and r.copy_gbps > 0
            assert (r.sdpa_ms and r.sdpa_ms > 0) or r.sdpa_note
            if extension.has_cuda_kernel():
                assert r.ext_ms and r.copy_fraction and r.copy_fraction > 0


def test_layout_targets_check_flash_and_the_faster_per_shape(capsys):
    """Where flash-attention 4 ran, each target is checked for ext, flash and the faster of them per shape."""
    from ewe.bench.attention import Row, _print_layout_targets

    def row(mode, ctx, ext, flash_ms, sdpa=None, fused=1.0, copy=None, flash_copy=None):
        return Row(mode, "bfloat16", 8, 128, ctx, ext, fused, None, batch=1, heads=32, kv_heads=8, head_dim=128,
                   sdpa_ms=sdpa, copy_fraction=copy, flash_ms=flash_ms, flash_copy_fraction=flash_copy)

    rows = [row("decode", 8192, 2.0, 1.0, sdpa=1.5, copy=0.3, flash_copy=0.75),
            row("decode", 1024, 0.5, 0.8, sdpa=0.6, copy=0.5, flash_copy=0.4),
            row("prefill", 8192, 4.0, 2.0, fused=3.0)]
    assert [r.best for r in rows] == ["flash", "ext", "flash"]
    _print_layout_targets(rows, on_cuda=True, sdpa_on=True)
    out = capsys.readouterr().out
    assert "ext >= 70% of copy: 30% at worst over 1 rows" in out and "flash >= 70% of copy: 75% at worst" in out
    assert "best >= 70% of copy: 75% at worst over 1 rows" in out
    assert "target (decode): ext at >= 0.9x sdpa's speed: worst sdpa/ext 0.75" in out
    assert "target (decode): flash at >= 0.9x sdpa's speed: worst sdpa/flash 0.75" in out  # 0.6 / 0.8 at ctx 1024
    assert "target (decode): best at >= 0.9x sdpa's speed: worst sdpa/best 1.20 over 2 rows" in out
    assert "target (prefill): best never slower than fused: worst fused/best 1.50" in out
