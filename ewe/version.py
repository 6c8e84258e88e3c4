"""The package version, in a module of its own so that what records it (a datastore's manifest,
a results row) needs nothing else of the package."""
from __future__ import annotations

import functools
import subprocess
from pathlib import Path

__version__ = "0.1.0"


@functools.lru_cache(maxsize=1)
def code_version() -> dict:
    """The code a result was made by: the git commit of the checkout ewe is imported from, and
    whether its tracked files differ from that commit. A figure is quoted with its commit, and a
    table built from rows of several commits (or uncommitted code) says so (eval/table.py).
    Outside a git checkout (an installed wheel) the commit is None and the version names the code."""
    root = Path(__file__).resolve().parents[1]

    def git(*args):
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=30)

    try:
        top, head = git("rev-parse", "--show-toplevel"), git("rev-parse", "HEAD")
        # a wheel installed in a venv inside some other repository is not that repository's code
        if head.returncode != 0 or Path(top.stdout.strip()).resolve() != root:
            return {"version": __version__, "commit": None, "dirty": None}
        status = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return {"version": __version__, "commit": None, "dirty": None}
    return {"version": __version__, "commit": head.stdout.strip(), "dirty": bool(status.stdout.strip())}
