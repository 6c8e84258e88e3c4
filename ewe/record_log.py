"""The one way ewe appends records: a JSONL file of records keyed by "id".

`ewe run`, `ewe generate --input`, `ewe check --input` and `ewe eval`'s scoring all write
through `RecordLog`, so all of them behave alike: one writer at a time (`<file>.lock`; a
second is refused, not interleaved), a rerun resumes from the ids already there (every line
checked first, a torn last line cut), and each record is flushed as soon as it is finished,
so a kill loses at most the one being written.
"""
from __future__ import annotations

import json
import os
import sys
from contextlib import ExitStack, contextmanager
from pathlib import Path

from .errors import RunError
from .files import LockHeld, atomic_write, file_lock, read_jsonl


def finished_ids(path: Path) -> set[str]:
    """Ids already in `path`, every line checked first.

    A complete last line that only lacks its newline is kept (the newline is added); a torn
    last line (a run killed mid-write: the start of a JSON object) is cut off. Any other line
    that is not a record, anywhere in the file, is an error: the file is not ewe's output, or
    it was damaged, and appending to it would bury the damage."""
    if not path.exists():
        return set()
    data = path.read_bytes()
    body, _, tail = data.rpartition(b"\n") if b"\n" in data else (b"", b"", data)
    ids: list[str] = []
    for n, line in enumerate(body.split(b"\n") if body else [], start=1):
        if line.strip():
            ids.append(_record_id(path, n, line))
    if tail.strip():
        n = body.count(b"\n") + 2 if body else 1
        try:
            ids.append(_record_id(path, n, tail))
            atomic_write(path, data + b"\n")  # complete: keep it
        except RunError:
            if not _torn(tail):
                raise
            print(f"ewe: {path}:{n}: cut a torn last line (a run stopped while writing it)", file=sys.stderr)
            atomic_write(path, data[: len(data) - len(tail)])
    return set(ids)


def _torn(line: bytes) -> bool:
    """The start of a JSON object that a kill cut short: a whole JSON value (a line without
    an "id", or one with a damaged byte inside) is never torn."""
    if not line.lstrip().startswith(b"{"):
        return False
    try:
        json.loads(line.decode("utf-8", errors="replace"))  # a cut inside a character is still torn
    except json.JSONDecodeError:
        return True
    return False


def _record_id(path: Path, n: int, line: bytes) -> str:
    try:
        row = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise RunError(f"{path}:{n}: not a result line ({e}); this output is not ewe's JSONL or was damaged: "
                       "repair or remove that line, or choose another --output") from None
    if not isinstance(row, dict) or "id" not in row:
        raise RunError(f"{path}:{n}: a JSON line without an \"id\"; this output is not ewe's JSONL: "
                       "choose another --output")
    return str(row["id"])


def refuse_same_file(input_path: Path, output: Path, *paths: Path) -> None:
    """--output (or a file written beside it) must never be the --input: appending would corrupt it."""
    real_in = os.path.realpath(input_path)
    for p in (output, *paths):
        if os.path.realpath(p) == real_in:
            raise RunError(f"--output {output} is the --input file {input_path}; choose another --output")


def refuse_unwritable(output: Path) -> None:
    """--output must be a file ewe can create or append to: not a folder, a device (/dev/null would
    swallow every result while the run reports them done) or a FIFO, and not under a folder that
    cannot be written (read-only, or a file in the way). Checked before any model loads."""
    output = Path(output)
    if output.exists() and not output.is_file():
        kind = "a folder" if output.is_dir() else "not a regular file"
        raise RunError(f"--output {output} is {kind}; give the path of a JSONL file (it is appended to and resumed from)")
    folder = output.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent  # the nearest folder that exists: the rest is created
    if not folder.is_dir():
        raise RunError(f"--output {output}: {folder} is not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise RunError(f"--output {output}: cannot write in {folder} (read-only or no permission)")


@contextmanager
def exclusive(output: Path):
    """Hold `<output>.lock`: two processes appending to one file would duplicate records."""
    stack = ExitStack()
    try:
        stack.enter_context(file_lock(output.with_name(output.name + ".lock"), wait=False))
    except LockHeld as e:
        raise RunError(f"another ewe run is writing {output} (pid {e.holder}); "
                       "wait for it or choose another --output") from None
    with stack:
        yield


class RecordLog:
    """Append records to `path` while holding its lock; `done` holds the ids already there.

        with RecordLog(out) as log:
            for case in cases:
                if case["id"] not in log.done:
                    log.append({"id": case["id"], ...})
    """

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.done: set[str] = set()
        self._stack = ExitStack()

    def __enter__(self) -> "RecordLog":
        refuse_unwritable(self.path)
        with ExitStack() as stack:  # a file that cannot be resumed releases the lock again
            stack.enter_context(exclusive(self.path))
            self.done = finished_ids(self.path)
            self._file = stack.enter_context(self.path.open("a", encoding="utf-8"))
            self._stack = stack.pop_all()
        return self

    def append(self, record: dict) -> None:
        """Write one finished record and flush it: a kill after this keeps it."""
        if "id" not in record:
            raise ValueError("a record needs an \"id\" (the key a rerun resumes by)")
        self._file.write(json.dumps(record, ensure_ascii=False) + "\n")
        self._file.flush()
        self.done.add(str(record["id"]))

    def records(self) -> list[dict]:
        """Every record in the file (written by this run or an earlier one)."""
        self._file.flush()
        return [row for _, row in read_jsonl(self.path, skip_bad=True) if isinstance(row, dict)]

    def __exit__(self, *exc) -> None:
        self._stack.close()
