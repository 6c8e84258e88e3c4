"""`ewe run --ray` and `ewe eval run --ray` (ewe/ray_pool.py) on a local Ray cluster.

The tiny random model is saved to a folder (`--model FOLDER`), so the Ray workers load it the
way any run loads a model, with nothing patched: a run through Ray and a local run of the same
configuration are compared record by record (test_faults' `comparable`: wall-clock fields
dropped, everything else equal). A worker is SIGKILLed mid-run: no prompt may be lost or written
twice. Without --ray, nothing of Ray is imported (checked in a fresh interpreter).

The cluster: `ray.init(num_cpus=2, include_dashboard=False)` in this process, once per module;
its address is passed to the commands run in child processes.
"""
from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml
from test_faults import comparable, lines

from ewe import cli
from ewe.runner import run

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
HAVE_RAY = importlib.util.find_spec("ray") is not None
needs_ray = pytest.mark.skipif(not HAVE_RAY, reason="Ray is not installed: pip install 'ewe[ray]' (make setup does)")

PASSAGES = ["Marie Curie was a Polish and naturalised-French physicist and chemist.",
            "Albert Einstein was a German-born theoretical physicist.",
            "The Eiffel Tower is in Paris."]
N_PROMPTS = 30


def prompt_rows(n: int) -> list[dict]:
    """Prompts with and without passages (shared ones too, so the encoder's reuse cache is hit
    in some workers and not others), plus one too long for the context (an error line)."""
    rows = []
    for i in range(n):
        row = {"id": f"p{i}", "prompt": f"Tell me a bio of person {i}.", "topic": f"person {i}"}
        if i % 3:
            row["passages"] = [PASSAGES[i % 3], f"Person {i} was born in 18{i:02d}."]
        rows.append(row)
    rows.insert(n // 2, {"id": "too-long", "prompt": "word " * 600})
    return rows


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory):
    from tiny import tiny_model, tiny_tokenizer

    folder = tmp_path_factory.mktemp("model") / "tiny"
    tiny_model(seed=1).save_pretrained(folder)
    tiny_tokenizer().save_pretrained(folder)
    return folder


@pytest.fixture
def files(tmp_path, tiny_folder):
    """A configuration on the tiny model folder and a prompts file; returns (config, prompts)."""
    config = tmp_path / "method.yaml"
    config.write_text(yaml.safe_dump({"model": {"name": str(tiny_folder)},
                                      "memory": {"unit_tokens": 24, "retrieval_units": 2},
                                      "retrieval": {"source": None}, "decoding": {"max_new_tokens": 40}}))
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("".join(json.dumps(r) + "\n" for r in prompt_rows(N_PROMPTS)))
    return config, prompts


def local_reference(config: Path, prompts: Path, out: Path) -> list[dict]:
    from ewe import EWE

    summary = run(EWE.from_config(config), prompts, out, progress=False)
    assert summary["prompts"] == N_PROMPTS and summary["errors"] == 1
    return lines(out)


def same(a, b, tolerance: float = 1e-5) -> bool:
    """Equal, except that floats (log-probabilities) may differ by `tolerance` (see below)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k], tolerance) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y, tolerance) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float):
        return abs(a - b) <= tolerance * max(1.0, abs(b))
    return a == b and type(a) is type(b)


def assert_same_run(out: Path, ref_out: Path) -> None:
    """Every id once, in input order, each record equal to the local run's; the same error line.

    Equal: text, token ids, memory, trace, counts exactly (test_faults' `comparable` drops the
    wall-clock fields), log-probabilities to 1e-5. Not bit for bit, because a unit's keys and
    values depend on which passages the encoder batched it with (the batch is padded to its
    longest passage), and a passage already in a process's reuse cache is not encoded again:
    a local run's own log-probabilities change in the last bits with the order of its prompts.
    Padding every batch to unit_tokens (ewe/memory/encoder.py) makes them bit for bit equal."""
    got, ref = lines(out), lines(ref_out)
    ids = [r["id"] for r in got]
    assert len(ids) == len(set(ids)), f"duplicated: {sorted(i for i in set(ids) if ids.count(i) > 1)}"
    assert ids == [r["id"] for r in ref]
    for a, b in zip(got, ref):
        assert a["token_ids"] == b["token_ids"] and a["text"] == b["text"], f"record {a['id']}: another answer"
        assert same(comparable(a), comparable(b)), f"record {a['id']} differs from the local run's"
    errors = lambda p: lines(p.with_name(p.name + ".errors.jsonl"))  # noqa: E731
    assert errors(out) == errors(ref_out) and [e["id"] for e in errors(out)] == ["too-long"]


# -- without Ray ----------------------------------------------------------------------------------


def test_without_ray_nothing_of_ray_is_imported(files, tmp_path):
    """A whole `ewe run` and the eval command's modules, in a fresh interpreter (Ray installed or not)."""
    config, prompts = files
    code = (
        "import json, sys\n"
        "from ewe import cli\n"
        "import ewe.eval.cli, ewe.eval.harness, ewe.runner\n"
        f"rc = cli.main(['run', '--config', {str(config)!r}, '--input', {str(prompts)!r}, "
        f"'--output', {str(tmp_path / 'out.jsonl')!r}, '--limit', '2'])\n"
        "print(json.dumps([rc, sorted(m for m in sys.modules if m == 'ray' or m.startswith('ray.'))]))\n"
    )
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rc, ray_modules = json.loads(proc.stdout.strip().splitlines()[-1])
    assert rc == 0 and ray_modules == []
    assert len(lines(tmp_path / "out.jsonl")) == 2


def test_ray_flags_without_ray_installed_say_how_to_install_it(files, tmp_path, monkeypatch):
    config, prompts = files
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError, as if not installed
    argv = ["run", "--config", str(config), "--input", str(prompts), "--output", str(tmp_path / "o.jsonl")]
    with pytest.raises(SystemExit, match=r"pip install 'ewe\[ray\]'"):
        cli.main(argv + ["--ray", "auto"])
    assert not (tmp_path / "o.jsonl").exists()
    with pytest.raises(SystemExit, match="--ray-workers needs --ray"):
        cli.main(argv + ["--ray-workers", "2"])
    with pytest.raises(SystemExit, match="--ray-workers needs --ray"):
        cli.main(["eval", "run", "--out", str(tmp_path / "e"), "--ray-workers", "2"])
    for bad in ("", "localhost", "http://x:1", "a b:1"):
        with pytest.raises(SystemExit):
            cli.build_parser().parse_args(argv + ["--ray", bad])
    for good in ("auto", "127.0.0.1:6379", "ray://head:10001", "head-node.local:6379"):
        assert cli.build_parser().parse_args(argv + ["--ray", good]).ray == good


def test_records_that_came_back_out_of_order_are_put_in_input_order(tmp_path):
    from ewe.runner import in_input_order

    out = tmp_path / "r.jsonl"
    out.write_text('{"id": "c"}\n{"id": "old"}\n{"id": "a"}\n{"id": "b", "x": "\\u2028"}\n')
    rows = [{"id": i} for i in "abc"]
    assert in_input_order(out, rows)
    # the places of a, b and c change hands; a line of another id keeps its place
    assert out.read_text() == '{"id": "a"}\n{"id": "old"}\n{"id": "b", "x": "\\u2028"}\n{"id": "c"}\n'
    assert not in_input_order(out, rows)


# -- on a local Ray cluster -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cluster():
    """A local Ray cluster of 2 CPUs for this module; yields its address."""
    if not HAVE_RAY:
        pytest.skip("Ray is not installed: pip install 'ewe[ray]' (make setup does)")
    import ray

    os.environ.setdefault("OMP_NUM_THREADS", "1")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()


def kill_a_worker_when_both_run(pool, out: Path, n: int) -> dict:
    """A thread that SIGKILLs one of `pool`'s workers once both have loaded (or, on a machine too
    busy for the second to load in time, the first, once half the prompts are written)."""
    seen = {}

    def watch():
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            written = len(lines(out)) if out.exists() else 0
            pids = list(pool.pids.values())
            if len(pids) == 2 or (pids and written >= n // 2):
                seen.update(pid=pids[-1], written=written, workers=len(pids))
                os.kill(pids[-1], signal.SIGKILL)
                return
            time.sleep(0.05)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    seen["thread"] = thread
    return seen


@needs_ray
def test_a_worker_killed_mid_run_loses_no_prompt_and_the_records_equal_a_local_run(cluster, files, tmp_path):
    from ewe.config import EWEConfig
    from ewe.ray_pool import RayPool

    config, prompts = files
    ref_out = tmp_path / "local" / "results.jsonl"
    local_reference(config, prompts, ref_out)

    out = tmp_path / "ray" / "results.jsonl"
    with RayPool(cluster, workers=2) as pool:
        killed = kill_a_worker_when_both_run(pool, out, N_PROMPTS)
        summary = run(pool.use(EWEConfig.from_yaml(config)), prompts, out, progress=False)
        killed["thread"].join(timeout=5)
        restarts = pool.restarts
    print(f"killed worker pid {killed.get('pid')} with {killed.get('written')} of {N_PROMPTS} records written "
          f"({killed.get('workers')} workers loaded); restarts {restarts}")
    assert "pid" in killed and killed["written"] < N_PROMPTS, "the kill came after the run"
    assert restarts == 1
    assert summary["prompts"] == N_PROMPTS and summary["this_run"] == N_PROMPTS and summary["errors"] == 1
    assert_same_run(out, ref_out)

    # a rerun tries the prompt that could not run again, on one worker (there is work for one), adds nothing
    with RayPool(cluster, workers=2) as pool:
        summary = run(pool.use(EWEConfig.from_yaml(config)), prompts, out, progress=False)
        assert len(pool.pids) == 1 and summary["this_run"] == 0 and summary["errors"] == 1
    assert_same_run(out, ref_out)


@needs_ray
def test_an_exception_raised_in_a_worker_stops_the_run_as_it_stops_a_local_one(cluster, files, tmp_path, capsys):
    config, prompts = files
    cfg = yaml.safe_load(config.read_text())
    cfg["model"]["name"] = str(tmp_path / "no-such-model")
    config.write_text(yaml.safe_dump(cfg))
    messages = []
    for extra in ([], ["--ray", cluster, "--ray-workers", "2"]):
        out = tmp_path / f"out{len(extra)}.jsonl"
        assert cli.main(["run", "--config", str(config), "--input", str(prompts), "--output", str(out), *extra]) == 2
        messages.append([line for line in capsys.readouterr().err.splitlines() if line.startswith("ewe: error")])
    assert messages[0] == messages[1] and "no such model folder" in messages[0][0]


@needs_ray
@pytest.mark.slow
def test_the_driver_killed_and_rerun_with_ray_resumes_to_the_local_result(cluster, files, tmp_path):
    config, prompts = files
    ref_out = tmp_path / "local" / "results.jsonl"
    local_reference(config, prompts, ref_out)

    out = tmp_path / "ray" / "results.jsonl"
    argv = ["run", "--config", str(config), "--input", str(prompts), "--output", str(out), "--ray", cluster,
            "--ray-workers", "2"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    log = tmp_path / "driver.log"
    with log.open("wb") as err:
        driver = subprocess.Popen([sys.executable, "-m", "ewe.cli", *argv], cwd=REPO, env=env, stdout=err,
                                  stderr=err, start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and driver.poll() is None:
            if out.exists() and len(out.read_text().splitlines()) >= 6:
                break
            time.sleep(0.05)
        assert driver.poll() is None, f"the driver ended before it was killed:\n{log.read_text()[-3000:]}"
        os.killpg(driver.pid, signal.SIGKILL)
        driver.wait()
    finally:
        if driver.poll() is None:
            os.killpg(driver.pid, signal.SIGKILL)
    written = len(out.read_text().splitlines())
    print(f"the driver was killed with {written} lines written")
    assert written < N_PROMPTS, "the kill came after the run"
    assert cli.main(argv) == 1  # not refused: the killed driver's lock went with it; 1: the too-long prompt
    assert_same_run(out, ref_out)


@needs_ray
@pytest.mark.slow
def test_a_prompt_that_kills_its_worker_each_time_is_an_error_line_and_restarts_are_bounded(cluster, files, tmp_path):
    from ewe.config import EWEConfig
    from ewe.errors import RunError
    from ewe.ray_pool import RayPool

    def poisoned(config):  # defined here, so Ray pickles it by value: the workers need not import this file
        import os
        import signal

        from ewe.ray_pool import load_ewe

        ewe = load_ewe(config)
        real = ewe.generate

        def generate(prompt, **kw):
            if prompt == "Tell me a bio of person 3.":
                os.kill(os.getpid(), signal.SIGKILL)
            return real(prompt, **kw)

        ewe.generate = generate
        return ewe

    config, prompts = files
    cfg = EWEConfig.from_yaml(config)
    out = tmp_path / "poisoned.jsonl"
    with RayPool(cluster, workers=2, factory=poisoned, prompt_attempts=2) as pool:
        summary = run(pool.use(cfg), prompts, out, progress=False)
        assert pool.restarts == 2
    assert summary["prompts"] == N_PROMPTS - 1 and summary["errors"] == 2
    errors = {e["id"]: e["error"] for e in lines(out.with_name(out.name + ".errors.jsonl"))}
    assert set(errors) == {"p3", "too-long"} and "worker died 2 times" in errors["p3"]
    assert sorted(r["id"] for r in lines(out)) == sorted(f"p{i}" for i in range(N_PROMPTS) if i != 3)

    out = tmp_path / "bounded.jsonl"
    with RayPool(cluster, workers=2, factory=poisoned, max_restarts=1, prompt_attempts=5) as pool:
        with pytest.raises(RunError, match="Ray workers died 2 times .the bound is 1.*rerun to resume"):
            run(pool.use(cfg), prompts, out, progress=False)
    kept = [r["id"] for r in lines(out)] if out.exists() else []
    assert len(kept) == len(set(kept)) and "p3" not in kept


@needs_ray
@pytest.mark.slow
def test_eval_run_with_ray_generates_through_the_workers_and_scores_here(cluster, tiny_folder, tmp_path,
                                                                         monkeypatch):
    """`ewe eval run --ray`: two methods generated by the workers, equal to a local eval's; the
    scorer (test_eval's lookup checker) runs in this process."""
    from test_eval import EVAL_BASE, LookupBackend, checking_runtime

    from ewe.eval import harness

    class ScoringLoader(harness.Loader):
        def runtime(self, config):
            if config.model.name == str(tiny_folder):  # a method's: the real tiny model
                return super().runtime(config)
            return checking_runtime(LookupBackend())  # the scorer's

    base = {**EVAL_BASE, "model": {"name": str(tiny_folder)}}
    methods = []
    for name, extra in [("plain", {}), ("memoryless", {"memory": {"unit_tokens": 24, "retrieval_units": 0}})]:
        path = tmp_path / f"{name}.yaml"
        path.write_text(yaml.safe_dump({**base, **extra}))
        methods.append(str(path))
    (tmp_path / "eval.yaml").write_text(yaml.safe_dump(EVAL_BASE))
    prompts = tmp_path / "toy.jsonl"
    prompts.write_text("".join(json.dumps({"id": f"q{i}", "prompt": f"Tell me a bio of Marie Curie, part {i}."}) + "\n"
                               for i in range(8)))
    monkeypatch.setattr(harness, "Loader", ScoringLoader)

    def argv(out):
        return ["eval", "run", "--methods", ",".join(methods), "--datasets", str(prompts), "--out", str(out),
                "--eval-config", str(tmp_path / "eval.yaml"), "--no-articles", "--max-new-tokens", "24"]

    assert cli.main(argv(tmp_path / "local")) == 0
    assert cli.main(argv(tmp_path / "ray") + ["--ray", cluster, "--ray-workers", "2"]) == 0
    for name in ("plain", "memoryless"):
        got, ref = lines(tmp_path / "ray" / "toy" / f"{name}.jsonl"), lines(tmp_path / "local" / "toy" / f"{name}.jsonl")
        assert same([comparable(r) for r in got], [comparable(r) for r in ref])
    summaries = [json.loads((tmp_path / d / "summary.json").read_text())["summaries"] for d in ("ray", "local")]
    dropped = ("seconds_per_prompt", "details")
    assert same([{k: v for k, v in s.items() if k not in dropped} for s in summaries[0]],
                [{k: v for k, v in s.items() if k not in dropped} for s in summaries[1]])
