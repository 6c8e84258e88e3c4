"""The architecture's rules, checked on the source (docs/DESIGN.md): one token loop, methods on
the Runtime, no reaching into another object's private state, files a reader can hold."""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EWE_FILES = sorted((ROOT / "ewe").rglob("*.py"))

# Third-party private names with no public equivalent, read only.
ALLOWED_PRIVATE = {
    ("ewe/modeling/attention.py", "model.config._attn_implementation"),  # transformers' only accessor
    ("ewe/ops/extension.py", "torch._C._dispatch_has_kernel_for_dispatch_key"),  # is a CUDA kernel registered?
    ("ewe/ops/extension.py", "torch._C"),
}


def _rel(p: Path) -> str:
    return p.relative_to(ROOT).as_posix()


def test_no_module_reaches_into_another_objects_private_members():
    found = []
    for p in EWE_FILES:
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
                owner = ast.unparse(node.value)
                where = (_rel(p), f"{owner}.{node.attr}")
                if owner not in ("self", "cls") and where not in ALLOWED_PRIVATE:
                    found.append(f"{where[0]}:{node.lineno}: {where[1]}")
    assert found == []


def test_only_the_token_loop_steps_the_model():
    """engine/session.py is the cache; engine/loop.py the one loop over it; bench/refresh.py times
    the cache's crop and prefill themselves (a benchmark of the primitive, not a decoding loop)."""
    allowed = {"ewe/engine/loop.py", "ewe/engine/session.py", "ewe/bench/refresh.py"}
    optimizers = {"opt", "sched"}  # the judge's training steps torch's optimizer and scheduler, not a model
    stepping = set()
    for p in EWE_FILES:
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("step", "prefill"):
                if ast.unparse(node.func.value) not in optimizers:
                    stepping.add(_rel(p))
    assert stepping - allowed == set()
    assert "ewe/engine/loop.py" in stepping


@pytest.mark.parametrize("package", ["methods", "controller", "runtime.py", "eval/scorer.py"])
def test_methods_work_on_the_runtime_not_the_facade(package):
    files = [ROOT / "ewe" / package] if package.endswith(".py") else sorted((ROOT / "ewe" / package).rglob("*.py"))
    for p in files:
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                assert not (node.module or "").endswith("api"), f"{_rel(p)} imports the EWE facade"


def test_no_file_over_800_lines():
    files = EWE_FILES + sorted((ROOT / "csrc").rglob("*.[ch]*"))
    long = {_rel(p): n for p in files if (n := len(p.read_text(encoding="utf-8").splitlines())) > 800}
    assert long == {}
