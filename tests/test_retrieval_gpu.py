"""`ewe bench faiss-devices` (ewe/bench/faiss_devices.py): the comparison rule on result sets made
by hand, the random vectors' determinism, the clear error where GPU FAISS is missing, the JSON;
and the real CPU-vs-GPU comparison, which runs only where FAISS sees a GPU."""
from __future__ import annotations

import json
import sys
import types

import numpy as np
import pytest

from ewe.bench import faiss_devices as fd  # numpy and faiss only: runs on the GPU machine's image as it is

faiss = pytest.importorskip("faiss")
HAS_GPU = hasattr(faiss, "StandardGpuResources") and faiss.get_num_gpus() > 0

IDS = np.array([[5, 3, 9, 1], [2, 7, 4, 8]])
SCORES = np.array([[0.9, 0.5, 0.5, 0.1], [0.8, 0.7, 0.3, 0.2]], dtype=np.float32)


# -- the comparison -------------------------------------------------------------------------------


def test_identical_results_are_equal():
    c = fd.compare(IDS, SCORES, IDS.copy(), SCORES.copy())
    assert c["equal"] and c["ids_equal"] == c["ranks"] == 8
    assert c["ties_reordered"] == c["mismatches"] == 0 and c["max_score_gap"] == 0


def test_a_tie_in_the_other_order_passes_as_a_tie():
    got = IDS.copy()
    got[0, 1], got[0, 2] = 9, 3  # equal scores (0.5), other order
    s = SCORES.copy()
    s[0, 2] += 4e-6  # summation noise under the tolerance
    c = fd.compare(IDS, SCORES, got, s)
    assert c["equal"] and c["ties_reordered"] == 2 and c["ids_equal"] == 6 and c["mismatches"] == 0


def test_a_swap_of_unequal_scores_is_a_mismatch_with_its_gap():
    got = IDS.copy()
    got[1, 1], got[1, 2] = 4, 7  # 0.7 and 0.3 swapped
    s = SCORES.copy()
    s[1, 1], s[1, 2] = 0.3, 0.7
    c = fd.compare(IDS, SCORES, got, s)
    assert not c["equal"] and c["mismatches"] == 2 and c["ties_reordered"] == 0
    first = c["first_mismatches"][0]
    assert (first["query"], first["rank"], first["id_ref"], first["id_got"]) == (1, 1, 7, 4)
    assert first["gap"] == pytest.approx(0.4, abs=1e-6)


def test_the_tolerance_is_the_boundary():
    got = IDS.copy()
    got[0, 3] = 6
    s = SCORES.copy()
    s[0, 3] = 0.1 + 3e-5
    assert fd.compare(IDS, SCORES, got, s, tol=1e-4)["equal"]
    assert not fd.compare(IDS, SCORES, got, s, tol=1e-5)["equal"]


def test_exact_scores_catch_a_wrong_id_that_reports_the_right_score():
    base = fd.random_unit_vectors(10, dim=8, seed=1)
    q = fd.random_unit_vectors(1, dim=8, seed=2)
    true = base @ q[0]
    order = np.argsort(-true)[:3]
    ids, scores = order[None, :], true[order][None, :]
    wrong = ids.copy()
    wrong[0, 2] = np.argsort(-true)[-1]  # the worst vector, claiming the third's score
    assert fd.compare(ids, scores, wrong, scores)["equal"]  # reported scores alone cannot tell
    c = fd.compare(ids, scores, wrong, scores, base=base, queries=q)
    assert not c["equal"] and c["first_mismatches"][0]["gap"] > 1e-3


def test_a_missing_result_is_a_mismatch():
    got = IDS.copy()
    got[1, 3] = -1
    assert fd.compare(IDS, SCORES, got, SCORES)["mismatches"] == 1


def test_shapes_must_match():
    with pytest.raises(ValueError, match="shapes"):
        fd.compare(IDS, SCORES, IDS[:, :3], SCORES[:, :3])


# -- vectors --------------------------------------------------------------------------------------


def test_random_vectors_are_seeded_unit_vectors():
    a = fd.random_unit_vectors(1000, seed=3)
    assert a.dtype == np.float32 and a.shape == (1000, fd.DIM)
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1, atol=1e-6)
    assert np.array_equal(a, fd.random_unit_vectors(1000, seed=3))
    assert not np.array_equal(a, fd.random_unit_vectors(1000, seed=4))


def test_random_vectors_do_not_depend_on_the_block_size(monkeypatch):
    whole = fd.random_unit_vectors(300, dim=16, seed=5)
    monkeypatch.setattr(fd, "BLOCK", 64)
    assert np.array_equal(whole, fd.random_unit_vectors(300, dim=16, seed=5))


def test_queries_are_seeded_and_near_stored_vectors():
    base, q, about = fd.load_vectors("random:2000", 20, seed=0)
    base2, q2, _ = fd.load_vectors("random:2000", 20, seed=0)
    assert np.array_equal(base, base2) and np.array_equal(q, q2) and about["n"] == 2000
    np.testing.assert_allclose(np.linalg.norm(q, axis=1), 1, atol=1e-6)
    assert (q @ base.T).max(axis=1).min() > 0.5  # each has a clear nearest vector


@pytest.mark.parametrize("bad", ["random:0", "random:x", "random", "file:abc"])
def test_bad_vector_sources_are_refused(bad):
    with pytest.raises(ValueError, match="--vectors"):
        fd.load_vectors(bad, 5, 0)


# -- no GPU FAISS: one clear error, never a CPU run labelled GPU -----------------------------------


@pytest.mark.skipif(HAS_GPU, reason="FAISS sees a GPU here")
def test_asking_for_gpu_without_gpu_faiss_fails_clearly(capsys, tmp_path):
    from ewe import cli

    out = tmp_path / "r.json"
    assert cli.main(["bench", "faiss-devices", "--vectors", "random:500", "--queries", "5", "--devices", "cpu", "gpu",
                     "--json", str(out)]) == 2
    err = capsys.readouterr()
    assert "GPU FAISS is not available" in err.err and "faiss" in err.err
    assert "without GPU support" in err.err or "no CUDA device" in err.err
    assert "gpu" not in err.out and not out.exists()


def test_gpu_faiss_without_a_device_names_that(monkeypatch):
    fake = types.SimpleNamespace(__version__="9.9", __file__="/x/faiss/__init__.py", StandardGpuResources=object,
                                 get_num_gpus=lambda: 0)
    monkeypatch.setitem(sys.modules, "faiss", fake)
    with pytest.raises(fd.GpuFaissUnavailable, match=r"sees no CUDA device \(faiss.get_num_gpus\(\) == 0\)"):
        fd.require_gpu_faiss()


def test_faiss_cpu_is_named_as_missing_gpu_support(monkeypatch):
    fake = types.SimpleNamespace(__version__="9.9", __file__="/x/faiss/__init__.py", get_num_gpus=lambda: 0)
    monkeypatch.setitem(sys.modules, "faiss", fake)
    with pytest.raises(fd.GpuFaissUnavailable, match="without GPU support"):
        fd.require_gpu_faiss()


# -- the report -----------------------------------------------------------------------------------


def test_cpu_run_writes_the_json_atomically(capsys, tmp_path):
    from ewe import cli  # through `ewe bench faiss-devices`

    out = tmp_path / "sub" / "r.json"
    assert cli.main(["bench", "faiss-devices", "--vectors", "random:3000", "--queries", "8", "-k", "5", "--devices",
                     "cpu", "--factory", "Flat", "--factory", "IVF16,Flat", "--nprobe", "4", "--batch-repeats", "2",
                     "--json", str(out)]) == 0
    r = json.loads(out.read_text())
    assert [p.name for p in out.parent.iterdir()] == ["r.json"]  # no temporary file left
    assert r["devices"] == ["cpu"] and r["queries"] == 8 and r["vectors"]["n"] == 3000
    assert [(x["factory"], x["device"], x["params"]) for x in r["rows"]] == [("Flat", "cpu", ""),
                                                                            ("IVF16,Flat", "cpu", "nprobe=4")]
    assert all(x["single_qps"] > 0 and x["batched_qps"] > 0 for x in r["rows"])
    assert "Flat" in capsys.readouterr().out


def test_the_json_write_keeps_the_old_file_on_failure(tmp_path):
    out = tmp_path / "r.json"
    out.write_text("old")
    with pytest.raises(TypeError):
        fd.write_json_atomic(out, {"x": object()})
    assert out.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["r.json"]


# -- the real thing -------------------------------------------------------------------------------


@pytest.mark.skipif(not HAS_GPU, reason="needs GPU FAISS and a CUDA device (faiss.get_num_gpus() > 0)")
def test_gpu_flat_index_returns_the_cpu_results(tmp_path):
    out = tmp_path / "gpu.json"
    rc = fd.main(["--vectors", "random:50000", "--queries", "64", "-k", "10",
                   "--devices", "cpu", "gpu", "--factory", "Flat", "--factory", "IVF64,Flat", "--nprobe", "8",
                   "--batch-repeats", "2", "--json", str(out)])
    r = json.loads(out.read_text())
    rows = {(x["factory"], x["device"]): x for x in r["rows"]}
    flat = rows[("Flat", "gpu")]
    assert "Gpu" in flat["type"]
    assert flat["vs_cpu"]["equal"], flat["vs_cpu"]["first_mismatches"]
    assert flat["vs_cpu"]["max_score_gap"] <= fd.TIE_TOL
    assert rc == 0
    ivf = rows[("IVF64,Flat", "gpu")]["vs_cpu"]
    assert ivf["ids_equal"] + ivf["ties_reordered"] >= 0.99 * ivf["ranks"]
