"""Long-form runs over a prompt file: `ewe run --config C --input prompts.jsonl --output results.jsonl`.

One result line is appended (and flushed) per finished prompt, so an interrupted run
keeps everything finished and a rerun skips finished ids. The configuration a run was
made with is saved beside the output (`<output>.config.json`); resuming with a
different one is refused rather than mixing two methods in one file. Prompts that fail
(e.g. too long for the context) go to `<output>.errors.jsonl` and are tried again on the
next run. A summary is printed and written to `<output>.summary.json` at the end.
"""
from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

from .errors import InputError, RunError
from .engine.request import Request
from .methods.registry import method_class
from .files import atomic_write, read_jsonl, write_json, write_jsonl
from .record_log import RecordLog, refuse_same_file, refuse_unwritable

__all__ = ["RunError", "preflight", "print_summary", "read_prompts", "run"]


def read_prompts(path: Path) -> list[dict]:
    """Every line of a prompts JSONL, checked before any generation; all bad lines reported at once.

    A line is {"prompt": str, "id"?: str|int, "passages"?: [str, ...], ...}; other fields
    are kept and copied to the result line. The id defaults to the line number.
    """
    def problem(row: dict):
        if not isinstance(row.get("prompt"), str) or not row["prompt"].strip():
            return 'needs a non-empty string field "prompt"'
        passages = row.get("passages", [])
        if not isinstance(passages, list) or not all(isinstance(x, str) and x.strip() for x in passages):
            return '"passages" must be a list of non-empty strings'
        return None

    return read_records(path, problem, "prompts")


def read_records(path: Path, problem, what: str) -> list[dict]:
    """The JSON objects of a JSONL input, each given an id (its "id", else its line number);
    `problem(row)` names what is wrong with a row, or None. All bad lines are reported at once."""
    if not path.exists():
        raise RunError(f"--input {path}: no such file")
    if not path.is_file():
        raise RunError(f"--input {path}: not a file")
    raw = path.read_bytes()
    try:
        lines = raw.decode("utf-8-sig").split("\n")  # a leading BOM (Windows editors) is dropped; not splitlines: U+2028 may sit inside a JSON string
    except UnicodeDecodeError as e:
        line = raw[:e.start].count(b"\n") + 1
        raise RunError(f"--input {path}:{line}: not UTF-8 text (byte {e.start})") from None
    rows, errors, seen = [], [], set()
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            errors.append(f"{path}:{n}: not JSON ({e.msg})")
            continue
        why = (problem(row) or _id_problem(row) or _not_text(row)) if isinstance(row, dict) else "must be a JSON object"
        if why:
            errors.append(f"{path}:{n}: {why}")
            continue
        row["id"] = str(row.get("id", n))
        if row["id"] in seen:
            errors.append(f"{path}:{n}: duplicate id {row['id']!r}")
            continue
        seen.add(row["id"])
        rows.append(row)
    if errors:
        whole = _one_json_value(raw)
        if whole is not None:
            raise RunError(f"--input {path} is {whole}, not JSONL: write one JSON object per line "
                           '(e.g. {"id": "1", "prompt": "..."}), with no enclosing [ ]')
        raise RunError("bad input lines:\n  " + "\n  ".join(errors))
    if not rows:
        raise RunError(f"--input {path} holds no {what}")
    return rows


def _id_problem(row: dict):
    """An "id" names a record in the output and a rerun resumes by it: a list, an object, true or
    an empty string would be written as Python's spelling of it ("['a']", "True", "") and match
    the wrong line, or none."""
    if "id" not in row:
        return None
    rid = row["id"]
    if isinstance(rid, bool) or not isinstance(rid, (str, int)) or (isinstance(rid, str) and not rid.strip()):
        got = "an empty string" if isinstance(rid, str) else json.dumps(rid)[:40]
        return f'"id" must be a non-empty string or an integer, got {got}'
    return None


def _not_text(row: dict):
    """JSON may escape half a surrogate pair ("\\ud800"), which no UTF-8 text holds: the tokenizer
    and the output file would both fail on it, after the model has run."""
    for key, value in row.items():
        try:
            json.dumps({key: value}, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError as e:
            bad = ord(e.object[e.start])
            field = json.dumps(key)  # ASCII-escaped: printable whatever the key holds
            return f"{field} holds an unpaired surrogate \\u{bad:04x}, which is not text (a broken escape or encoding)"
    return None


def _one_json_value(raw: bytes) -> str | None:
    """What the whole file is when it is one JSON array or one object spread over lines."""
    try:
        whole = json.loads(raw.decode("utf-8"))
    except ValueError:
        return None
    if isinstance(whole, list):
        return "one JSON array"
    if isinstance(whole, dict) and raw.strip().count(b"\n"):
        return "one JSON object written over several lines"
    return None


def check_same_config(output: Path, config: dict, force: bool) -> None:
    """Refuse to append to an output made with a different configuration (unless `force`)."""
    saved = output.with_name(output.name + ".config.json")
    if saved.exists() and output.exists() and output.stat().st_size:
        before = _with_current_defaults(json.loads(saved.read_text(encoding="utf-8")))
        if before != config:
            diff = sorted(_diff(before, config))
            if not force:
                raise RunError(
                    f"{output} was made with another configuration (differs in {', '.join(diff[:6])}); "
                    "write to a new --output, or pass --force to append anyway"
                )
            # --force: the first configuration stays where it was; each forced one is added to a history
            history = output.with_name(output.name + ".config.history.jsonl")
            with history.open("a", encoding="utf-8") as f:
                f.write(json.dumps({"forced_at": time.strftime("%Y-%m-%dT%H:%M:%S"), "differs_in": diff,
                                    "config": config}, ensure_ascii=False) + "\n")
            print(f"ewe: --force: appending with another configuration; it is recorded in {history}", file=sys.stderr)
            return
    output.parent.mkdir(parents=True, exist_ok=True)
    write_json(saved, config)


def _with_current_defaults(saved: dict) -> dict:
    """A saved configuration as this version reads it: settings added since it was saved
    (a new section, a new key) take their defaults, so upgrading ewe does not stop a resume.
    One that no longer validates is compared as saved (and so reported as different)."""
    from pydantic import ValidationError

    from .config import EWEConfig

    try:
        return EWEConfig.model_validate(EWEConfig.upgrade_saved(saved)).model_dump(mode="json")
    except ValidationError:
        return saved


def _diff(a, b, prefix="") -> set[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        out = set()
        for k in set(a) | set(b):
            out |= _diff(a.get(k), b.get(k), f"{prefix}{k}.")
        return out
    return set() if a == b else {prefix.rstrip(".")}


def summarize(results: list[dict], wall_s: float, errors: int) -> dict:
    stats = [r["stats"] for r in results]

    def total(key):
        return sum(s.get(key, 0) for s in stats)

    per_prompt = [s.get("total_s", 0.0) for s in stats]
    return {
        "prompts": len(results),
        "errors": errors,
        "wall_s": round(wall_s, 2),
        "seconds_per_prompt_median": round(statistics.median(per_prompt), 3) if per_prompt else None,
        "new_tokens": total("new_tokens"),
        "decoded_tokens": total("decoded_tokens") or total("new_tokens"),
        "pauses_retrieval": total("pauses_retrieval"),
        "pauses_verification": total("pauses_verification"),
        "checks": total("checks"),
        "failed_checks": total("failed_checks"),
        "errored_checks": total("errored_checks"),
        "backtracks": total("backtracks"),
        "finish_reasons": {k: sum(1 for r in results if r["finish_reason"] == k)
                           for k in sorted({r["finish_reason"] for r in results})},
    }


def run(ewe, input_path: Path, output: Path, *, limit: int | None = None, force: bool = False,
        show_trace: bool = False, progress: bool = True, passages: list[str] | None = None,
        rows: list[dict] | None = None) -> dict:
    """Generate for every unfinished prompt of `input_path`, appending to `output`; return the summary.

    `ewe`: an EWE, or an open RayPool (ewe/ray_pool.py) whose workers generate in parallel; either
    way the records go through the same RecordLog, and the output ends in input order.

    `passages` are used for lines without a "passages" field (`ewe generate --passage`); a
    line's own "passages" always wins, and [] there means no memory at all, as in the API.
    `rows`: what `preflight` returned for these arguments (a caller that checked before loading
    the model), so the prompts are not read twice."""
    if rows is None:
        rows = preflight(input_path, output, limit)
    with RecordLog(output) as log:
        return _run(ewe, rows, input_path, log, force, show_trace, progress, passages)


_SIDE_FILES = (".config.json", ".config.history.jsonl", ".errors.jsonl", ".summary.json", ".lock")


def preflight(input_path: Path, output: Path, limit: int | None = None) -> list[dict]:
    """Everything about the files and flags checked before a model is loaded: the prompts to run."""
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise RunError(f"--limit must be a positive number of prompts, got {limit!r}")
    refuse_same_file(input_path, output, *(output.with_name(output.name + s) for s in _SIDE_FILES))
    rows = read_prompts(input_path)
    refuse_unwritable(output)
    return rows[:limit] if limit is not None else rows


def _run(ewe, rows, input_path, log: RecordLog, force, show_trace, progress, default_passages=None) -> dict:
    from tqdm import tqdm

    from .controller import render
    from .version import code_version

    output = log.path
    check_same_config(output, ewe.config.model_dump(mode="json"), force)
    todo = [r for r in rows if r["id"] not in log.done]
    if len(todo) < len(rows):
        print(f"ewe run: resuming: {len(rows) - len(todo)} of {len(rows)} prompts already in {output}", file=sys.stderr)
    errors_path = output.with_name(output.name + ".errors.jsonl")
    _forget_errors_of(errors_path, {r["id"] for r in todo})
    finished, errors, t0 = [], 0, time.perf_counter()
    checks = CheckHealth()
    with tqdm(total=len(todo), desc="prompts", unit="prompt", disable=not progress) as bar:
        for row, result, error in _generations(ewe, todo, default_passages):
            extra = {k: v for k, v in row.items() if k not in ("prompt", "passages")}
            if error is not None:  # this prompt cannot run; the others can (a fault stops the run)
                errors += 1
                with errors_path.open("a", encoding="utf-8") as f:
                    f.write(json.dumps({**extra, "prompt": row["prompt"], "error": error}, ensure_ascii=False) + "\n")
                tqdm.write(f"ewe run: prompt {row['id']}: {error}", file=sys.stderr)
                bar.update(1)
                continue
            checks.add(row["id"], result)
            log.append({**extra, **result, "code": code_version()})
            finished.append(result)
            if show_trace:
                tqdm.write(f"\n== {row['id']}: {row['prompt']}\n{render(result['trace'])}\n{result['text']}\n")
            bar.set_postfix(backtracks=sum(r["stats"].get("backtracks", 0) for r in finished))
            bar.update(1)
    in_input_order(output, rows)
    wanted = {r["id"] for r in rows}
    everything = [r for r in log.records() if str(r.get("id")) in wanted]
    summary = summarize(everything, time.perf_counter() - t0, errors)
    summary.update(input=str(input_path), output=str(output), this_run=len(finished),
                   skipped_finished=len(rows) - len(todo))
    write_json(output.with_name(output.name + ".summary.json"), summary)
    return summary


def _generations(ewe, todo: list[dict], default_passages):
    """(row, result dict, None) per finished prompt, or (row, None, why) for one that cannot run
    (an InputError: too long for the context, ...; any other exception stops the run).
    `ewe`: an EWE, which runs the prompts here one after another, or a RayPool (ewe/ray_pool.py),
    whose workers run them in parallel and return them as they finish."""
    if hasattr(ewe, "generations"):
        yield from ewe.generations(todo, default_passages)
        return
    if method_class(ewe.config.method).joins(ewe.config):
        yield from _joined_generations(ewe, todo, default_passages)
        return
    for row in todo:
        passages = row["passages"] if "passages" in row else default_passages
        try:
            result = ewe.generate(row["prompt"], passages=passages).to_dict()
        except InputError as e:
            yield row, None, str(e)
            continue
        yield row, result, None


ROWS_AT_ONCE = 8  # `ewe run` with controller.batch_rows and no controller.max_rows


def _joined_generations(ewe, todo: list[dict], default_passages):
    """`_generations` with continuous batching (EWE's controller with controller.batch_rows): every
    prompt is a request to one engine (ewe/engine/engine.py), up to controller.max_rows
    (ROWS_AT_ONCE when unset) decoding as the rows of one batch, the next joining as soon as a row
    ends; each result is yielded as its row ends. An InputError is that prompt's; any other error
    stops the run."""
    from collections import deque

    from .engine import Engine

    finished: deque = deque()
    engine = Engine(method_class(ewe.config.method)(ewe.runtime), ewe.config.controller.max_rows or ROWS_AT_ONCE,
                    ewe.runtime.decoding())
    for row in todo:
        try:
            prompt, passages, _ = ewe.check_request(row["prompt"], row.get("passages", default_passages))
        except InputError as e:
            finished.append((row, None, str(e)))
            continue
        engine.add_request(Request(
            prompt, passages, on_done=lambda result, row=row: finished.append((row, result.to_dict(), None)),
            on_error=lambda e, row=row: finished.append((row, None, str(e)) if isinstance(e, InputError) else e)))
    while True:
        while finished:
            item = finished.popleft()
            if isinstance(item, BaseException):
                raise item  # the run stops, with what it wrote kept
            yield item
        if not engine.step() and not finished:
            return


def in_input_order(output: Path, rows: list[dict]) -> bool:
    """Put the records of `rows` in `output` in input order, if they are not: a run whose records
    came back in another order (Ray workers finish when they finish) ends as a local run does.
    Only the places those records hold change hands; lines of other ids stay where they are. One
    atomic rewrite, by the process holding the output's lock, once no record is being appended;
    a kill before it leaves the records in the order they finished, and the next run that
    gets to its end puts them in order. Returns whether the file was rewritten."""
    position = {r["id"]: n for n, r in enumerate(rows)}
    lines = output.read_bytes().split(b"\n") if output.exists() else []
    ids = [str(json.loads(line).get("id")) if line.strip() else None for line in lines]
    slots = [(n, position[i]) for n, i in enumerate(ids) if i in position]
    order = sorted(slots, key=lambda s: s[1])  # stable: an id twice keeps its lines' order
    if [p for _, p in slots] == [p for _, p in order]:
        return False
    reordered = list(lines)
    for (slot, _), (source, _) in zip(slots, order):
        reordered[slot] = lines[source]
    atomic_write(output, b"\n".join(reordered))
    return True


class CheckHealth:
    """Stops a run whose fact-checks all fail with an error: a broken checker must not pass for
    one that finds nothing wrong (EWE would quietly run memory-only). The prompt that shows it
    is not written, so it runs again once the checker is fixed."""

    def __init__(self):
        self.checks = self.errored = 0

    def add(self, prompt_id: str, result: dict) -> None:
        stats = result.get("stats", {})
        self.checks += stats.get("checks", 0)
        self.errored += stats.get("errored_checks", 0)
        if self.checks and self.errored == self.checks:
            first = next((v["error"] for e in result.get("trace", []) if e.get("type") == "check"
                          for v in e.get("verdicts", []) if v.get("error")), "?")
            raise RunError(f"prompt {prompt_id}: every fact-check so far failed with an error ({first}); the checker "
                           "is not working, and the run would go on without checks. Fix it and rerun: finished "
                           "prompts are kept")


def _forget_errors_of(errors_path: Path, ids: set[str]) -> None:
    """Errors of prompts about to be tried again leave the errors file, so a rerun lists each once."""
    if not errors_path.exists():
        return
    kept = [row for _, row in read_jsonl(errors_path, skip_bad=True)
            if not (isinstance(row, dict) and str(row.get("id")) in ids)]
    write_jsonl(errors_path, kept)


def print_summary(s: dict) -> None:
    print(f"ewe run: {s['this_run']} prompts generated in {s['wall_s']:.1f} s, {s['skipped_finished']} were already "
          f"done, {s['errors']} failed; the output holds {s['prompts']} "
          f"({s['seconds_per_prompt_median'] or 0:.2f} s per prompt, median)")
    print(f"  tokens kept {s['new_tokens']} of {s['decoded_tokens']} decoded; pauses: retrieval "
          f"{s['pauses_retrieval']}, verification {s['pauses_verification']}; checks {s['checks']} "
          f"({s['failed_checks']} failed, {s['errored_checks']} could not be made); backtracks {s['backtracks']}; finish {s['finish_reasons']}")
