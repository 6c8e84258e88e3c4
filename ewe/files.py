"""Result files: written so that a reader, or a run killed halfway, never sees half a file,
and JSONL read back with errors that name the file and line.

Every JSON / JSONL / report file ewe writes whole goes through `atomic_write`: a temporary
file in the same folder, flushed to disk, then renamed over the target.
"""
from __future__ import annotations

import errno
import fcntl
import json
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Optional


def atomic_write(path: str | os.PathLike, data: str | bytes) -> Path:
    """Replace `path` with `data` in one rename (parent folders are created)."""
    path = Path(path)
    if path.is_dir():  # os.replace would name only the temporary file
        raise IsADirectoryError(errno.EISDIR, "a folder is where the file would be written; give a file name", str(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    _remove_stale_temporaries(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes it private; results are for reading
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def _remove_stale_temporaries(path: Path) -> None:
    """Temporary files of earlier writes of `path` whose process is gone (a kill mid-write)."""
    for tmp in path.parent.glob(f".{path.name}.*.tmp"):
        pid = tmp.name[len(f".{path.name}."):].split(".", 1)[0]
        if pid.isdigit() and not process_alive(int(pid)):
            tmp.unlink(missing_ok=True)


def build_dir(parent: Path, prefix: str) -> Path:
    """A fresh folder in `parent` to build in before it is renamed into place, with the
    permissions a plain mkdir gives (mkdtemp's are 0700: a shared cache would be unreadable
    to everyone else)."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    mask = os.umask(0)
    os.umask(mask)
    os.chmod(path, 0o777 & ~mask)
    return path


class LockHeld(Exception):
    """`file_lock(..., wait=False)` found the lock held; `holder` is the pid it records ("?" if none)."""

    def __init__(self, lock: Path, holder: str):
        super().__init__(f"{lock} is held by pid {holder}")
        self.lock, self.holder = lock, holder


@contextmanager
def file_lock(lock: str | os.PathLike, *, wait: bool = True, waiting: Optional[Callable[[str], None]] = None):
    """Hold an exclusive flock on the file `lock` (created, with its folder; it records the
    holder's pid), so that one process at a time does what the lock guards. The kernel drops
    the lock when its process ends, however it ends: a killed holder never blocks the next.

    wait: False raises LockHeld at once if another process holds it; True waits, first calling
        `waiting(holder_pid)` so that the wait can be explained.
    """
    lock = Path(lock)
    lock.parent.mkdir(parents=True, exist_ok=True)
    with lock.open("a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            holder = f.read().strip() or "?"
            if not wait:
                raise LockHeld(lock, holder) from None
            if waiting is not None:
                waiting(holder)
            fcntl.flock(f, fcntl.LOCK_EX)
        f.seek(0)
        f.truncate()
        f.write(str(os.getpid()))
        f.flush()
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def process_alive(pid: int) -> bool:
    """Whether process `pid` still runs (its temporary files and work folders are still in use)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def write_json(path: str | os.PathLike, data) -> Path:
    return atomic_write(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def write_jsonl(path: str | os.PathLike, rows) -> Path:
    return atomic_write(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))


def read_jsonl(path: str | os.PathLike, *, skip_bad: bool = False) -> list[tuple[int, object]]:
    """(line number, value) for each non-blank line. A line that is not JSON raises ValueError
    naming path:line, or with `skip_bad` is left out (the torn last line of a killed run)."""
    path = Path(path)
    rows = []
    # "\n" only: str.splitlines would also break at U+2028, U+2029 and U+0085, which JSON
    # leaves unescaped inside strings (ensure_ascii=False), and so lose those records
    for n, line in enumerate(path.read_text(encoding="utf-8-sig").split("\n"), 1):
        if not line.strip():
            continue
        try:
            rows.append((n, json.loads(line)))
        except json.JSONDecodeError as e:
            if not skip_bad:
                raise ValueError(f"{path}:{n}: not JSON ({e.msg})") from None
    return rows
