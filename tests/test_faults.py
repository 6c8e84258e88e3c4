"""Fault tests: real `ewe` processes are SIGKILLed at random points, then the command is run again.

Each command runs once uninterrupted (the reference), in tests/fault_child.py: the real CLI
entry, with only model loading replaced by the tests' scripted model (see that file). Then,
for each seed, a fresh child runs the same command in a folder of its own and is killed with
SIGKILL (its whole process group) after a delay drawn from `random.Random(seed)` over the
reference's running time (from "go", once its imports are done, to its exit): seed i of n
draws from the i-th n-th of that time, so the kills fall early, midway and late. The first
seed also kills a second child, one that is resuming what the first left. Finally the same
command runs again, in the test's own process with the same patch, and must finish (not be
refused: no lock left stuck) with output equal to the reference's:

* `ewe run`: every prompt id exactly once, in input order, each record equal to the
  reference's once wall-clock timings are dropped (`comparable`).
* `ewe eval run`: the same for both methods' generations and for the scoring details; the
  summary table's numbers equal.
* `ewe index build`: the same passages, vectors, manifest and search results as the reference
  build, the target never half-written after a kill, no work folder left once rerun.

What each kill left is printed (shown when a test fails, or with -s). Two points too brief
for a random kill to find are aimed at directly (EWE_FAULT_KILL_AT): inside an atomic write
(its temporary file is removed by the next write) and between the two renames of a
datastore rebuild (the old datastore is put back by the next load or build).
"""
from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import yaml

import fault_child
from test_eval import eval_inputs
from ewe import cli

pytestmark = pytest.mark.slow  # ~60 s of CPU: 17 Python processes that each import torch first

TESTS = Path(__file__).resolve().parent
CHILD = TESTS / "fault_child.py"
REPO = TESTS.parent
DATA = TESTS / "data"
KILLS = {0: 2, 1: 1, 2: 1}  # seed -> children killed in a row before the rerun that finishes
CHILD_TIMEOUT = 180  # seconds; a child still alive then is killed, and the test fails


# -- children -----------------------------------------------------------------------------------


class Child:
    """fault_child.py, started at once (its imports take seconds) and told to begin by `go`. It
    runs in a session of its own, so one killpg reaches everything it started."""

    live: set[Child] = set()  # not yet reaped; the `reap` fixture kills whatever a failed test left

    def __init__(self, which: str, args: list, log: Path, kill_at: str | None = None):
        # one thread: the tiny models run several times faster so, and far faster on a busy 2-core machine
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "OMP_NUM_THREADS": "1"}
        env.pop("EWE_FAULT_KILL_AT", None)
        if kill_at:
            env["EWE_FAULT_KILL_AT"] = kill_at
        self.which, self.log = which, log
        with open(log, "ab") as err:
            self.proc = subprocess.Popen([sys.executable, str(CHILD), which, *map(str, args)], cwd=REPO, env=env,
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                                         start_new_session=True)
        Child.live.add(self)
        self.guard = threading.Timer(CHILD_TIMEOUT, self.kill)
        self.guard.start()

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # it leads its session: its pid is the group id
        except ProcessLookupError:
            pass

    def go(self, kill_after: float | None = None) -> tuple[int, float]:
        """Let it run; with `kill_after`, SIGKILL it that many seconds later. Returns (exit status,
        seconds it ran); -9: killed."""
        try:
            line = b"\n"
            while line and line.strip() != b"ready":  # training the tiny tokenizer prints blank lines first
                line = self.proc.stdout.readline()
            if not line:
                self.proc.wait()
                pytest.fail(f"fault_child.py {self.which} did not start (exit {self.proc.returncode}):\n"
                            f"{self.log.read_text()[-3000:]}")
            self.proc.stdin.write(b"go\n")
            self.proc.stdin.flush()
            t0 = time.monotonic()
            if kill_after is not None:
                time.sleep(kill_after)
                self.kill()
            self.proc.communicate()  # the rest of its stdout (a summary), so a full pipe never blocks it
            return self.proc.returncode, time.monotonic() - t0
        finally:
            self.close()

    def close(self) -> None:
        self.guard.cancel()
        if self.proc.poll() is None:
            self.kill()
            self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            pipe.close()
        Child.live.discard(self)


@pytest.fixture(autouse=True)
def reap():
    """No child outlives its test, whatever happened in it."""
    yield
    for child in list(Child.live):
        child.close()


@pytest.fixture(autouse=True)
def one_thread():
    """The reruns in this process run on one thread too, as the children do (restored after)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


class Faults:
    """One command's reference run, then its killed runs, seed by seed. Each child is started one
    step ahead, so its imports overlap with the work before it (the reference run, the kill before
    it, the test's rerun and checks); it begins its command only when the one before is gone.

        faults = Faults("run", log, args_of)   # args_of(None): the reference's arguments; (seed): a seed's
        span = faults.reference()
        for seed in faults.seeds(left_of):     # KILLS[seed] children were killed; check, rerun, check
            ...
        faults.some_were_killed()
    """

    def __init__(self, which: str, log: Path, args_of):
        self.which, self.log, self.args_of = which, log, args_of
        self.steps = [seed for seed in KILLS for _ in range(KILLS[seed])]
        self.statuses: dict[int, list[int]] = {}

    def reference(self) -> float:
        """Run the uninterrupted reference; its running time is the range kill times are drawn from."""
        ref = Child(self.which, self.args_of(None), self.log)
        self.ahead = Child(self.which, self.args_of(self.steps[0]), self.log)
        status, self.span = ref.go()
        assert status == 0, self.log.read_text()[-3000:]
        return self.span

    def delays(self, seed: int) -> list[float]:
        """The first in the seed's share of the span, any later one (resuming) anywhere in it."""
        rng, i = random.Random(seed), list(KILLS).index(seed)
        return [self.span * (i + rng.random()) / len(KILLS)] + [rng.uniform(0, self.span)
                                                                   for _ in range(KILLS[seed] - 1)]

    def seeds(self, left_of):
        """Kill each seed's children, then yield the seed; `left_of(seed)` says what a kill left."""
        delays = {seed: self.delays(seed) for seed in KILLS}
        for n, seed in enumerate(self.steps):
            child, after = self.ahead, self.steps[n + 1:]
            self.ahead = Child(self.which, self.args_of(after[0]), self.log) if after else None
            delay = delays[seed].pop(0)
            status, _ = child.go(kill_after=delay)
            self.statuses.setdefault(seed, []).append(status)
            print(f"{self.which} seed {seed}: killed {delay:.2f} s after go (the uninterrupted run took "
                  f"{self.span:.2f} s): exit {status}; left {left_of(seed)}")
            if not delays[seed]:
                yield seed

    def some_were_killed(self) -> None:
        """Guards the test itself: kills that all came after the child finished would prove nothing."""
        statuses = [s for seq in self.statuses.values() for s in seq]
        assert -signal.SIGKILL in statuses and set(statuses) <= {0, -signal.SIGKILL}, self.statuses


# -- records ------------------------------------------------------------------------------------


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def comparable(record: dict) -> dict:
    """A result line (GenerationResult.to_dict() plus the prompt's fields) without what differs
    between two runs of the same prompts on the same model. Everything else must be equal:
    text, token ids, log-probs, memory, counts, the trace's events and their order."""
    r = json.loads(json.dumps(record))
    # stats: every "*_s" key is wall-clock seconds (retrieve_s, encode_s, check_s, total_s, prefill_s,
    # decode_s; ewe/stats.py); the counts beside them (tokens, pauses, checks, backtracks, bytes) stay
    r["stats"] = {k: v for k, v in r["stats"].items() if not k.endswith("_s")}
    for event in r["trace"]:
        event.pop("t", None)  # seconds since the prompt started (ewe/controller/trace.py)
        event.pop("seconds", None)  # a retrieval's or a check's wall-clock timings
    return r


def comparable_details(record: dict) -> dict:
    """A scoring details line (ewe/eval/scorer.py) without its timings, copied from the result
    line: stats.total_s (wall-clock seconds that prompt took) and stats.time_parts (its parts)."""
    r = json.loads(json.dumps(record))
    r["stats"].pop("total_s")
    r["stats"].pop("time_parts")
    return r


def unscored_details(record: dict) -> dict:
    """A details line as the scorer appends it: its scores and the run's own sentence verdicts
    (`run_sentences`) are filled in by one atomic rewrite of the whole file once every response is
    checked, so a kill before that leaves neither."""
    return {k: v for k, v in comparable_details(record).items()
            if k not in ("K", "precision", "recall", "f1", "run_sentences")}


def assert_same_records(resumed: list[dict], ref: list[dict], normalize) -> None:
    ids = [r["id"] for r in resumed]
    assert len(ids) == len(set(ids)), f"duplicated ids: {sorted(i for i in set(ids) if ids.count(i) > 1)}"
    assert ids == [r["id"] for r in ref], "lost ids, or another order than the input's"
    for a, b in zip(resumed, ref):
        assert normalize(a) == normalize(b), f"record {a['id']} differs from the uninterrupted run's"


def whole_lines(path: Path) -> tuple[list[dict], bool]:
    """What a kill left in a JSONL file: its complete lines, and whether a torn one follows."""
    body = path.read_text(encoding="utf-8") if path.exists() else ""
    return [json.loads(x) for x in body.splitlines()[: body.count("\n")]], not body.endswith("\n") and bool(body)


def describe(path: Path) -> str:
    kept, torn = whole_lines(path)
    return f"{path.name}: {len(kept)} records" + (" and a torn line" if torn else "")


# -- ewe run ------------------------------------------------------------------------------------

RUN_CONFIG = {  # tests/test_runner.py's CONFIG
    "memory": {"unit_tokens": 24, "retrieval_units": 2, "feedback_units": 2},
    "retrieval": {"source": None},
    "decoding": {"max_new_tokens": 120},
    "controller": {"verify_trigger": "interval", "verify_interval": 4},
}
RUN_PROMPTS = 12


@pytest.fixture
def run_files(tmp_path):
    """`ewe run`'s arguments for an output file: test_runner's configuration, RUN_PROMPTS prompts."""
    config = tmp_path / "method.yaml"
    config.write_text(yaml.safe_dump(RUN_CONFIG))
    prompts = tmp_path / "prompts.jsonl"
    rows = [{"id": f"p{i}", "prompt": f"Tell me a bio of person {i}.", "topic": f"person {i}"}
            for i in range(RUN_PROMPTS)]
    prompts.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return lambda out: ["--config", str(config), "--input", str(prompts), "--output", str(out)]


def test_ewe_run_killed_at_random_points_resumes_to_the_uninterrupted_result(tmp_path, run_files, monkeypatch):
    def out_of(seed):
        return tmp_path / ("reference" if seed is None else f"seed{seed}") / "results.jsonl"

    faults = Faults("run", tmp_path / "children.log", lambda seed: run_files(out_of(seed)))
    faults.reference()
    ref = lines(out_of(None))
    assert [r["id"] for r in ref] == [f"p{i}" for i in range(RUN_PROMPTS)]

    fault_child.patch_run(monkeypatch.setattr)
    for seed in faults.seeds(lambda seed: describe(out_of(seed))):
        out = out_of(seed)
        kept, _ = whole_lines(out)
        assert_same_records(kept, ref[: len(kept)], comparable)  # whole records, of the first prompts
        assert cli.main(["run", *run_files(out)]) == 0  # not refused: the killed child's lock went with it
        assert_same_records(lines(out), ref, comparable)
        summary = json.loads(out.with_name(out.name + ".summary.json").read_text())
        assert summary["prompts"] == RUN_PROMPTS and summary["this_run"] + summary["skipped_finished"] == RUN_PROMPTS
        assert cli.main(["run", *run_files(out)]) == 0 and len(lines(out)) == RUN_PROMPTS  # done: nothing added
    faults.some_were_killed()


def test_ewe_run_killed_inside_an_atomic_write_leaves_no_temporary_file(tmp_path, run_files, monkeypatch):
    out = tmp_path / "out" / "results.jsonl"
    child = Child("run", run_files(out), tmp_path / "children.log", kill_at="atomic_write")
    assert child.go()[0] == -signal.SIGKILL
    fault_child.patch_run(monkeypatch.setattr)
    assert cli.main(["run", *run_files(out)]) == 0 and len(lines(out)) == RUN_PROMPTS
    assert sorted(p.name for p in out.parent.iterdir()) == sorted(
        out.name + s for s in ("", ".config.json", ".lock", ".summary.json"))


# -- ewe eval run -------------------------------------------------------------------------------

EVAL_PROMPTS = 12
EVAL_FILES = [f"{name}{kind}.jsonl" for name in ("plain", "checked") for kind in ("", ".details")]
SUMMARY_DROPPED = ("seconds_per_prompt",  # the mean of the results' total_s: wall-clock seconds
                   "details")  # the details file's path, inside each run's own --out folder


def test_ewe_eval_run_killed_at_random_points_resumes_to_the_uninterrupted_result(tmp_path, monkeypatch):
    methods, eval_cfg, prompts = eval_inputs(  # test_eval's two methods: one plain, one that checks and backtracks
        tmp_path, [{"id": f"q{i}", "prompt": f"Tell me a bio of Marie Curie, part {i}."} for i in range(EVAL_PROMPTS)])

    def out_of(seed):
        return tmp_path / ("reference" if seed is None else f"seed{seed}")

    def argv(out: Path) -> list[str]:
        return ["--methods", ",".join(methods), "--datasets", str(prompts), "--out", str(out),
                "--eval-config", str(eval_cfg), "--no-articles", "--max-new-tokens", "40"]

    def left(seed) -> str:
        out = out_of(seed)
        return ", ".join([*(describe(out / "toy" / f) for f in EVAL_FILES),
                          "the report" if (out / "summary.json").exists() else "no report"])

    faults = Faults("eval", tmp_path / "children.log", lambda seed: argv(out_of(seed)))
    faults.reference()
    ref_out = out_of(None)
    ref_summary = json.loads((ref_out / "summary.json").read_text())

    fault_child.patch_eval(monkeypatch.setattr)
    for seed in faults.seeds(left):
        out = out_of(seed)
        for f in EVAL_FILES:
            kept, _ = whole_lines(out / "toy" / f)
            normalize = unscored_details if ".details" in f else comparable
            assert_same_records(kept, lines(ref_out / "toy" / f)[: len(kept)], normalize)
        assert cli.main(["eval", "run", *argv(out)]) == 0  # not refused: no lock left stuck
        assert (out / "prompts" / "toy.jsonl").read_bytes() == (ref_out / "prompts" / "toy.jsonl").read_bytes()
        for f in EVAL_FILES:
            got = lines(out / "toy" / f)
            assert len(got) == EVAL_PROMPTS
            assert_same_records(got, lines(ref_out / "toy" / f), comparable_details if ".details" in f else comparable)
        summary = json.loads((out / "summary.json").read_text())
        assert summary["K"] == ref_summary["K"]
        for got, want in zip(summary["summaries"], ref_summary["summaries"], strict=True):
            assert ({k: v for k, v in got.items() if k not in SUMMARY_DROPPED}
                    == {k: v for k, v in want.items() if k not in SUMMARY_DROPPED})
    faults.some_were_killed()


# -- ewe index build ----------------------------------------------------------------------------

QUERIES = ["who discovered penicillin", "the tallest mountain in the world", "composer who went deaf",
           "how do plants make sugar from sunlight"]


def index_argv(target: Path) -> list[str]:
    """test_retrieval_datastore's CLI build: its small corpus, the MiniLM tokenizer and embedder."""
    from test_retrieval_datastore import minilm_folder

    return [str(DATA / "corpus.jsonl"), str(target), "--tokenizer", minilm_folder(), "--chunk-tokens", "48"]


def leftovers(target: Path) -> list[str]:
    """Work folders (`.NAME.tmp-*`) and set-aside old datastores (`.NAME.old-*`) beside `target`."""
    return sorted(p.name for p in target.parent.iterdir() if p.name.startswith(f".{target.name}."))


def comparable_manifest(manifest: dict) -> dict:
    """A datastore's manifest without what differs between two builds of the same corpus."""
    m = json.loads(json.dumps(manifest))
    del m["created"]  # when it was built: a timestamp
    del m["build_seconds"]  # wall-clock seconds per build stage (and the machine's CPU count)
    # the checksums of embeddings.npy and index.faiss hash float32 bytes: a rerun embeds in this
    # process, a reference in a child, and a last-bit difference between the two would change them
    # (the vectors are compared to 1e-6, the search results exactly); passages.jsonl's stays
    for name in ("embeddings.npy", "index.faiss"):
        del m["files"][name]["sha256"]
    return m


def assert_same_datastore(target: Path, ref_path: Path) -> None:
    from ewe.retrieval import Datastore

    ds, ref = Datastore.load(target, verify=True), Datastore.load(ref_path, verify=True)
    assert (target / "passages.jsonl").read_bytes() == (ref_path / "passages.jsonl").read_bytes()
    np.testing.assert_allclose(np.asarray(ds.embeddings), np.asarray(ref.embeddings), rtol=0, atol=1e-6)
    assert comparable_manifest(ds.manifest) == comparable_manifest(ref.manifest)
    hits, ref_hits = ds.search(QUERIES, k=5), ref.search(QUERIES, k=5)
    assert [[(h.id, h.text) for h in r] for r in hits] == [[(h.id, h.text) for h in r] for r in ref_hits]
    np.testing.assert_allclose([[h.score for h in r] for r in hits], [[h.score for h in r] for r in ref_hits],
                               atol=1e-6)


def test_ewe_index_build_killed_at_random_points_rebuilds_to_the_uninterrupted_datastore(tmp_path):
    from ewe.retrieval import Datastore

    def target_of(seed):
        return tmp_path / ("reference" if seed is None else f"seed{seed}") / "ds"

    def left(seed) -> str:
        target = target_of(seed)
        return f"{'a' if target.exists() else 'no'} datastore, and {leftovers(target) or 'nothing'} beside it"

    for seed in [None, *KILLS]:
        target_of(seed).parent.mkdir()
    faults = Faults("index", tmp_path / "children.log", lambda seed: index_argv(target_of(seed)))
    faults.reference()
    for seed in faults.seeds(left):
        target = target_of(seed)
        if target.exists():  # the build's last step renames it into place: never half-written
            Datastore.load(target, verify=True)
        assert cli.main(["index", "build", *index_argv(target)]) == 0
        assert leftovers(target) == [], "a work folder of a killed build was left behind"
        assert_same_datastore(target, target_of(None))
    faults.some_were_killed()


def test_ewe_index_rebuild_killed_while_committing_keeps_a_datastore_and_leaves_nothing(tmp_path):
    from ewe.retrieval import Datastore

    target, ref_path = tmp_path / "ds", tmp_path / "reference" / "ds"
    child = Child("index", index_argv(target), tmp_path / "children.log", kill_at="commit")  # imports meanwhile
    assert cli.main(["index", "build", *index_argv(target)]) == 0  # an uninterrupted build, then rebuilt
    shutil.copytree(target, ref_path)
    assert child.go()[0] == -signal.SIGKILL
    Datastore.load(target, verify=True)  # the previous datastore, or the new one: either will do
    assert cli.main(["index", "build", *index_argv(target)]) == 0
    assert_same_datastore(target, ref_path)
    assert leftovers(target) == []
