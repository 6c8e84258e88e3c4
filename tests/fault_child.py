"""The process tests/test_faults.py kills: the real `ewe` command line, on the tests' scripted model.

    python tests/fault_child.py run   ARGS...   # `ewe run ARGS`, the model loaded as test_runner's `setup` does
    python tests/fault_child.py eval  ARGS...   # `ewe eval run ARGS`, models loaded as test_eval's ScriptedLoader does
    python tests/fault_child.py index ARGS...   # `ewe index build ARGS` (the real embedded MiniLM; nothing replaced)

Only how models are loaded is replaced (the CLI's `_load_ewe`, the eval harness's `Loader`);
argument parsing, the runner, the record log, scoring and the datastore build are the real
code. Once everything is imported and patched, the child prints "ready" on stdout and waits
for "go" on stdin: the parent starts children ahead of time, and draws its kill time over the
command's own work rather than over Python's start-up (the child exits as soon as the command
returns, skipping the interpreter's slow tear-down).

With EWE_FAULT_KILL_AT set, the child SIGKILLs itself at that one point instead of waiting
for the parent to kill it at a random time (see `kill_self_at`).
"""
from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent
sys.path.insert(0, str(TESTS))
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def patch_run(setattr=setattr) -> None:
    """Exactly what tests/test_runner.py's `setup` fixture does to `cli._load_ewe` (without its
    interrupt hook): the scripted model writes the bio that feedback corrects, checked by the
    scripted checker. `setattr`: pytest's monkeypatch.setattr, for the same patch in the test's process."""
    from scripted import ScriptedChecker, scripted_model, text_script
    from test_controller import B_WRONG, corrected_by_feedback
    from tiny import tiny_tokenizer

    from ewe import EWE, cli
    from ewe.config import EWEConfig

    model = scripted_model(text_script(corrected_by_feedback()))
    checker = ScriptedChecker(false={B_WRONG})

    def load(args):
        cfg = EWEConfig.from_yaml(args.config, **cli.config_overrides(args))
        return EWE(model, tiny_tokenizer(), cfg, fact_checker=checker)

    setattr(cli, "_load_ewe", load)


def patch_eval(setattr=setattr) -> None:
    """The eval harness builds its models through `harness.Loader()`; test_eval's ScriptedLoader
    stands in for it (every method on the scripted model, the scorer's checker a lookup table)."""
    from test_eval import LookupBackend, ScriptedLoader

    from ewe.eval import harness

    setattr(harness, "Loader", lambda: ScriptedLoader(LookupBackend()))


class _Os:
    """The os module as one ewe module sees it, with one function replaced."""

    def __init__(self, **replaced):
        self.__dict__.update(replaced)

    def __getattr__(self, name):
        return getattr(os, name)


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def kill_self_at(point: str) -> None:
    """Die by SIGKILL at a point too brief for a random kill to find:

    atomic_write  ewe/files.py `atomic_write`, after its temporary file is written, before the
                  rename (the first file `ewe run` writes whole: OUTPUT.config.json)
    commit        ewe/retrieval/folders.py `commit`, rebuilding over an existing datastore:
                  after the old one is renamed aside, before the new one is renamed into place
    """
    if point == "atomic_write":
        from ewe import files

        files.os = _Os(fsync=lambda fd: _die())
    elif point == "commit":
        from ewe.retrieval import folders

        def replace(src, dst):
            os.replace(src, dst)
            if Path(dst).parent.name.startswith(f".{Path(src).name}.old-"):
                _die()

        folders.os = _Os(replace=replace)
    else:
        raise SystemExit(f"fault_child.py: unknown EWE_FAULT_KILL_AT {point!r}")


def main(argv: list[str]) -> int:
    which, args = argv[0], argv[1:]
    from ewe import cli

    # what the command imports on its way is imported before "ready", so that the time after it
    # is the command's own work
    if which == "run":
        import tqdm  # noqa: F401

        import ewe.controller  # noqa: F401
        import ewe.runner  # noqa: F401

        patch_run()
        args = ["run", *args]
    elif which == "eval":
        import ewe.eval.harness  # noqa: F401
        import ewe.eval.report  # noqa: F401  (matplotlib)

        patch_eval()
        args = ["eval", "run", *args]
    elif which == "index":
        import faiss  # noqa: F401
        import sentence_transformers  # noqa: F401

        import ewe.retrieval.datastore  # noqa: F401

        args = ["index", "build", *args]
    else:
        raise SystemExit(f"fault_child.py: unknown command {which!r}")
    if os.environ.get("EWE_FAULT_KILL_AT"):
        kill_self_at(os.environ["EWE_FAULT_KILL_AT"])
    print("ready", flush=True)
    if sys.stdin.readline().strip() != "go":  # the parent starts children ahead, and says when to begin
        return 0
    return cli.main(args)


if __name__ == "__main__":
    status = main(sys.argv[1:])
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)  # the command is done, its files closed; tearing down torch is no part of its run
