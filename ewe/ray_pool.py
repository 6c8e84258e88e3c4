"""Prompt sets over Ray workers: `ewe run --ray auto|ADDRESS` and `ewe eval run --ray ...`.

    with RayPool("auto", workers=2) as pool:       # connect, or start a local cluster
        pool.use(config)                            # the EWEConfig a local run would load
        summary = runner.run(pool, prompts, output) # the same resumable, locked JSONL as a local run

* Workers: N Ray actors (`workers`, default: the cluster's CPUs / `cpus_per_worker`), each
  loading the model and the datastore ONCE per configuration, in its own process, from the
  same EWEConfig a local run builds (`load_ewe`: the eval harness's Loader, so methods that
  agree on the model share it). Datastore folders are opened read-only from their path: on a
  cluster of several machines that path must be on a shared filesystem, and "embedded" is
  built on first use in each machine's cache (~/.cache/ewe): build it beforehand there.
  With the embedded model or datastore (built into that cache on first use), the first worker
  loads alone and the others once it is ready, so that each is built once, not by every worker
  at the same time; otherwise all start at once. Never more workers than prompts to run.
* Prompts: the driver hands one prompt at a time to each idle worker, in input order; the
  DRIVER alone writes, through the runner's RecordLog (lock, resume, flush per record), as
  results come back. A finished run's output is in input order, as a local run's (the runner
  puts it so once every prompt is done), so the records equal a local run's line by line.
* Faults: a worker that dies (killed, out of memory, its machine lost) is replaced, and the
  prompt it was running goes back to the head of the queue: no prompt is lost, and since
  only the driver writes, none is written twice. Restarts are bounded (`max_restarts`,
  default 2 per worker, at least 4): past that the run stops with a RunError, finished
  records kept. A prompt running each time a worker died, `prompt_attempts` times, is
  recorded in the errors file (like a prompt too long for the context) and the run goes on.
  An exception raised by a worker is raised in the driver, as a local run raises it.
* Determinism: every prompt is decoded from a fresh sampler seeded by the configuration, as
  in a local run, so which worker ran a prompt does not change a greedy answer. One state
  outlives a prompt, in a worker as in a local run: the unit encoder's reuse cache. A batch of
  units is padded to its longest passage, and a unit's keys and values differ in the last bits
  with that width, so a passage encoded earlier (cached) or batched with other passages can give
  log-probabilities that differ by ~1e-7, and a greedy near-tie could flip: a local run's own
  records depend on its prompt order in this way. Configurations whose prompts each encode one
  passage (rag.yaml) are bit for bit equal; padding every batch to unit_tokens would make all so.
  (Measured here: 1 and 2 torch threads give the same bits.)

Ray is imported only here, and only when a pool is opened: without --ray nothing of Ray loads.
"""
from __future__ import annotations

import argparse
import os
import re
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from .argtypes import positive_int
from .errors import InputError, RunError

RAY_MISSING = "--ray needs Ray, which is not installed: pip install 'ewe[ray]'"
WAIT_S = 0.5  # ray.wait's timeout: between waits Ctrl-C and SIGTERM get through


def import_ray():
    """The ray module, or a RunError that says how to install it."""
    try:
        import ray
    except ImportError:
        raise RunError(RAY_MISSING) from None
    return ray


# -- the command line -------------------------------------------------------------------------


def ray_address(v: str) -> str:
    """`--ray`: "auto", or a Ray cluster's address: HOST:PORT (its GCS) or ray://HOST:PORT (Ray Client)."""
    v = v.strip()
    if v == "auto" or re.fullmatch(r"(ray://)?[A-Za-z0-9.\-\[\]:]+:\d{1,5}", v):
        return v
    raise argparse.ArgumentTypeError(f"{v!r}: expected auto, HOST:PORT or ray://HOST:PORT")


def add_ray_options(p: argparse.ArgumentParser) -> None:
    """`--ray auto|ADDRESS` and `--ray-workers N`, for `ewe run` and `ewe eval run`."""
    g = p.add_argument_group("Ray (pip install 'ewe[ray]')")
    g.add_argument("--ray", type=ray_address, metavar="auto|ADDRESS",
                   help='spread the prompts over Ray workers, each loading the model once: "auto" joins the '
                        "running cluster or starts a local one; ADDRESS (HOST:PORT, ray://HOST:PORT) joins that one. "
                        "The output is the same resumable JSONL as without --ray")
    g.add_argument("--ray-workers", type=positive_int, metavar="N",
                   help="workers (one CPU each; default: one per CPU of the cluster)")


# -- inside a worker ------------------------------------------------------------------------

_LOADER = None  # one per worker process: methods that agree on the model and datastore share them


def load_ewe(config):
    """The default factory: an EWE for `config`, its model and datastore loaded now (the eval
    harness's Loader, so a worker running several methods loads a shared model once)."""
    global _LOADER
    from .eval.harness import Loader

    if _LOADER is None:
        _LOADER = Loader()
    ewe = _LOADER.load(config)
    if config.retrieval.source is not None:
        _ = ewe.runtime.datastore  # now, while this worker loads alone (builds_on_first_use)
        _LOADER.remember(ewe.runtime)
    return ewe


def builds_on_first_use(config) -> bool:
    """Whether loading `config` may build something into ewe's cache on first use (the embedded
    model's dequantized weights, the embedded Wikipedia datastore): then one worker loads first,
    alone, and the others once it is ready, so that it is built once, not by every worker at once."""
    return config.model.name == "embedded" or config.retrieval.source == "embedded"


class PromptWorker:
    """One Ray actor: loads an EWE for a configuration, then answers prompts one at a time."""

    def __init__(self, factory: Callable, threads: int):
        import torch

        torch.set_num_threads(max(1, threads))
        self.factory, self.ewe = factory, None

    def load(self, config) -> dict:
        t0 = time.perf_counter()
        self.ewe = self.factory(config)
        return {"pid": os.getpid(), "seconds": round(time.perf_counter() - t0, 2)}

    def generate(self, prompt: str, passages: list[str] | None) -> tuple[str, object]:
        """("ok", the result's dict) or ("input_error", why): a prompt that cannot run, as the
        local runner records it. Any other exception is raised (and stops the run)."""
        try:
            return "ok", self.ewe.generate(prompt, passages=passages).to_dict()
        except InputError as e:
            return "input_error", str(e)


# -- the driver -------------------------------------------------------------------------------


class RayPool:
    """Ray workers that generate for a prompt file; see the module docstring.

    address: "auto" (the running cluster: RAY_ADDRESS, else the last one started on this
        machine; none running: a local one is started for this run and stopped after it), or a
        cluster's address ("HOST:PORT", "ray://HOST:PORT"). If this process is already connected
        to Ray (ray.init was called), that connection is used and left open.
    factory: config -> EWE, called once per configuration in each worker (default `load_ewe`);
        it is pickled to the workers, so it must be importable there.
    """

    def __init__(self, address: str = "auto", workers: int | None = None, *, cpus_per_worker: int = 1,
                 max_restarts: int | None = None, prompt_attempts: int = 3, factory: Callable | None = None):
        if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
            raise RunError(f"--ray-workers must be a positive number, got {workers!r}")
        self.address, self.workers_wanted, self.cpus = address, workers, cpus_per_worker
        self.max_restarts, self.prompt_attempts = max_restarts, prompt_attempts
        self.factory = factory or load_ewe
        self.config = None
        self.restarts = 0
        self.pids: dict = {}  # actor -> worker pid, once it has loaded (tests kill workers by it)
        self._ray = None
        self._owns_connection = False
        self._actors: list = []
        self._loaded: dict = {}  # actor -> the configuration its last load was for
        self._cls = None

    # -- connection ------------------------------------------------------------------------

    def __enter__(self) -> "RayPool":
        ray = self._ray = import_ray()
        if ray.is_initialized():
            say("using this process's Ray connection")
        else:
            with _keeping_sigterm():
                self._connect(ray)
            self._owns_connection = True
        cpus = int(ray.cluster_resources().get("CPU", 0))
        fit = max(1, cpus // self.cpus)
        self.size = self.workers_wanted or fit
        if self.size > fit:
            say(f"{self.size} workers asked, the cluster's {cpus} CPUs hold {fit} of {self.cpus} CPU(s): "
                "the others wait for CPUs")
        if self.max_restarts is None:
            self.max_restarts = max(4, 2 * self.size)
        say(f"{self.size} workers of {self.cpus} CPU(s) each; the cluster has {cpus} CPUs")
        self._cls = ray.remote(num_cpus=self.cpus, max_restarts=0, max_task_retries=0)(PromptWorker)
        return self

    def _connect(self, ray) -> None:
        if self.address == "auto":
            try:
                ray.init(address="auto", include_dashboard=False)
                say("connected to the running Ray cluster")
            except ConnectionError:
                ray.init(include_dashboard=False)
                say("no Ray cluster running: started a local one for this run")
            return
        try:
            ray.init(address=self.address)
        except ConnectionError as e:
            raise RunError(f"--ray {self.address}: cannot connect to a Ray cluster there ({e})") from None

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        ray = self._ray
        if ray is None:
            return
        for actor in self._actors:
            try:
                ray.kill(actor, no_restart=True)
            except Exception:  # already gone
                pass
        self._actors, self._loaded, self.pids = [], {}, {}
        if self._owns_connection:
            ray.shutdown()
        self._ray = None

    # -- work -------------------------------------------------------------------------------

    def use(self, config) -> "RayPool":
        """Generate with `config` (an EWEConfig) from now on; workers load it before their next prompt."""
        self.config = config
        return self

    def generations(self, rows: list[dict], default_passages=None) -> Iterator[tuple[dict, dict | None, str | None]]:
        """(row, result dict, None) per finished prompt, or (row, None, why) for one that cannot
        run, in the order they finish. Workers are started on the first call that has work."""
        if self.config is None:
            raise RunError("RayPool.use(config) first: the workers need the configuration to load")
        if self._ray is None:
            raise RunError("RayPool is not open: use it as `with RayPool(...) as pool:`")
        ray = self._ray
        lost = worker_lost(ray)
        queue = deque(rows)
        deaths = {}  # row id -> how often a worker died while running it
        loading, running = {}, {}  # ref -> actor; ref -> (actor, row)
        idle = []
        if not queue:
            return

        def load(actor) -> None:
            loading[self._load(actor)] = actor

        for actor in self._actors:
            if self._loaded.get(actor) is self.config:
                idle.append(actor)
            else:
                load(actor)
        if not self._actors:
            for _ in range(1 if builds_on_first_use(self.config) else min(self.size, len(queue))):
                load(self._start())  # staggered: the first alone, the others once it is ready
        while queue or running:
            while idle and queue:
                actor, row = idle.pop(0), queue.popleft()
                passages = row["passages"] if "passages" in row else default_passages
                running[actor.generate.remote(row["prompt"], passages)] = (actor, row)
            if not loading and not running:  # every worker died, and its replacement too
                raise RunError("no Ray worker is left to run the prompts")
            ready, _ = ray.wait([*loading, *running], num_returns=1, timeout=WAIT_S)
            for ref in ready:
                if ref in loading:
                    actor = loading.pop(ref)
                    try:
                        info = ray.get(ref)
                    except lost as e:
                        load(self._replace(actor, e, "while loading"))
                        continue
                    except ray.exceptions.RayTaskError as e:
                        raise _cause(e) from None
                    self.pids[actor] = info["pid"]
                    idle.append(actor)
                    # the first worker is ready: start the others, as many as there is work for
                    while len(self._actors) < min(self.size, len(queue) + len(running)):
                        load(self._start())
                    continue
                actor, row = running.pop(ref)
                try:
                    status, value = ray.get(ref)
                except lost as e:
                    deaths[row["id"]] = died = deaths.get(row["id"], 0) + 1
                    again = died < self.prompt_attempts
                    load(self._replace(actor, e, f"running prompt {row['id']}, which " + (
                        "goes back to the queue" if again else f"is given up after {died} tries")))
                    if again:
                        queue.appendleft(row)  # first in line again: nothing lost, nothing written twice
                    else:
                        yield row, None, (f"its Ray worker died {died} times while running it (out of memory?); "
                                          "tried again on the next run")
                    continue
                except ray.exceptions.RayTaskError as e:
                    raise _cause(e) from None
                idle.append(actor)
                yield (row, value, None) if status == "ok" else (row, None, value)

    def _start(self):
        actor = self._cls.remote(self.factory, self.cpus)
        self._actors.append(actor)
        return actor

    def _load(self, actor):
        self._loaded[actor] = self.config
        return actor.load.remote(self.config)

    def _replace(self, actor, error, doing: str):
        """A new worker in place of `actor`, which died (`error`) `doing` something; RunError past
        max_restarts."""
        ray = self._ray
        self._actors.remove(actor)
        self._loaded.pop(actor, None)
        self.pids.pop(actor, None)
        try:
            ray.kill(actor, no_restart=True)
        except Exception:
            pass
        self.restarts += 1
        why = str(error).strip().splitlines()[0][:300] if str(error).strip() else type(error).__name__
        if self.restarts > self.max_restarts:
            raise RunError(f"Ray workers died {self.restarts} times (the bound is {self.max_restarts}); the last: "
                           f"{why}. Finished prompts are kept: rerun to resume")
        say(f"a worker died {doing} ({type(error).__name__}); starting another ({self.restarts} of at most "
            f"{self.max_restarts} restarts)")
        return self._start()


@contextmanager
def _keeping_sigterm():
    """ray.init replaces the SIGTERM handler (with one that exits at once): `ewe` keeps its own,
    which stops a run as Ctrl-C does, so the pool closes (workers and an owned cluster stopped)
    and the command reports the interruption."""
    main = threading.current_thread() is threading.main_thread()
    previous = signal.getsignal(signal.SIGTERM) if main else None
    try:
        yield
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def worker_lost(ray) -> tuple[type, ...]:
    """What ray.get raises when a worker, or the result it held, is gone (its process killed, its
    machine lost), as opposed to an exception the worker's own code raised (RayTaskError)."""
    names = ("RayActorError", "ObjectLostError", "NodeDiedError")  # RayActorError covers ActorDiedError
    return tuple(getattr(ray.exceptions, n) for n in names if hasattr(ray.exceptions, n))


def _cause(error) -> BaseException:
    """The exception a worker raised, as a local run would have raised it."""
    cause = getattr(error, "cause", None)
    return cause if isinstance(cause, BaseException) else error


def say(message: str) -> None:
    print(f"ewe: ray: {message}", file=sys.stderr)
