"""Result files: written so that a reader, or a run killed halfway, never sees half a file,
and JSONL read back with errors that name the file and line.

Every JSON / JSONL / report file ewe writes whole goes through `atomic_write`: a temporary
file in the same folder, flushed to disk, then renamed over the target.
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path


def atomic_write(path: str | os.PathLike, data: str | bytes) -> Path:
    """Replace `path` with `data` in one rename (parent folders are created)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
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


def write_json(path: str | os.PathLike, data) -> Path:
    return atomic_write(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def write_jsonl(path: str | os.PathLike, rows) -> Path:
    return atomic_write(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))


def read_jsonl(path: str | os.PathLike, *, skip_bad: bool = False) -> list[tuple[int, object]]:
    """(line number, value) for each non-blank line. A line that is not JSON raises ValueError
    naming path:line, or with `skip_bad` is left out (the torn last line of a killed run)."""
    path = Path(path)
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            rows.append((n, json.loads(line)))
        except json.JSONDecodeError as e:
            if not skip_bad:
                raise ValueError(f"{path}:{n}: not JSON ({e.msg})") from None
    return rows
