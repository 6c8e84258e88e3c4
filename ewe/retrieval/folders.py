"""A datastore folder's life on disk: built in a work folder, swapped into place, and put
right after a kill.

A build writes into `.NAME.tmp-PID-*` beside the target and renames it into place; a
rebuild first sets the old datastore aside in `.NAME.old-PID-*`. Either folder outliving
its process means a kill: work folders are removed, and a set-aside datastore with nothing
at its place is put back, by the next build or load.
"""
from __future__ import annotations

import logging
import os
import shutil
import tempfile
from pathlib import Path

from ..files import build_dir, process_alive

logger = logging.getLogger(__name__)


def work_dir(path: Path) -> Path:
    """A fresh `.NAME.tmp-PID-*` folder beside `path` to build in (renamed into place when done).
    Folders of earlier builds whose process is gone (killed) are removed first."""
    path.parent.mkdir(parents=True, exist_ok=True)
    recover(path)
    for stale in _dead(path, "tmp"):
        shutil.rmtree(stale, ignore_errors=True)
    return build_dir(path.parent, f".{path.name}.tmp-{os.getpid()}-")


def _dead(path: Path, kind: str) -> list[Path]:
    """`.NAME.KIND-PID-*` folders beside `path` whose process is gone."""
    out = []
    for folder in path.parent.glob(f".{path.name}.{kind}-*"):
        pid = folder.name[len(f".{path.name}.{kind}-"):].split("-", 1)[0]
        if pid.isdigit() and not process_alive(int(pid)):
            out.append(folder)
    return out


def recover(path: Path) -> None:
    """Undo what a kill inside `commit` left: with no datastore at `path`, the old one set aside
    (`.NAME.old-PID-*/ds`) is put back; set-aside copies beside a datastore are removed."""
    for old in sorted(_dead(path, "old"), key=lambda p: p.stat().st_mtime, reverse=True):
        if not path.exists() and (old / "ds").is_dir():
            os.replace(old / "ds", path)
            logger.warning("%s: put back the datastore a killed rebuild had set aside", path)
        shutil.rmtree(old, ignore_errors=True)


def commit(tmp: Path, path: Path) -> None:
    """Put the finished folder `tmp` at `path`. A folder cannot be os.replace'd over a
    non-empty one, so an old datastore is first renamed aside, then removed."""
    old = None
    if path.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{path.name}.old-{os.getpid()}-", dir=path.parent))
        os.replace(path, old / "ds")
    try:
        os.replace(tmp, path)
    except BaseException:
        if old is not None:
            os.replace(old / "ds", path)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
