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
    ("ewe/ops/extension.py", "ewe._C"),  # our own compiled module (its BUILD_INFO)
    ("ewe/ops/quantized_linear.py", "super()._apply"),  # nn.Module's hook under .to() / .half(): buffers rechecked
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
                if owner not in ("self", "cls", "super()") and where not in ALLOWED_PRIVATE:
                    found.append(f"{where[0]}:{node.lineno}: {where[1]}")
    assert found == []


def test_only_the_token_loop_steps_the_model():
    """engine/session.py is the cache (engine/slots.py its slots: a branch from a slot steps the
    branch's new session once); engine/loop.py the one loop over it (engine/continuous.py: the
    same loop, rows joining its batch); bench/refresh.py times the cache's crop and prefill
    themselves (a benchmark of the primitive, not a decoding loop). Clients step an Engine
    (engine/engine.py, `engine.step()`), which steps the loop."""
    allowed = {"ewe/engine/loop.py", "ewe/engine/continuous.py", "ewe/engine/session.py", "ewe/engine/slots.py",
               "ewe/bench/refresh.py",
               "ewe/engine/engine.py"}
    # the judge's training steps torch's optimizer and scheduler, not a model; `engine` is an Engine
    not_models = {"opt", "sched", "engine"}
    stepping = set()
    for p in EWE_FILES:
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("step", "prefill"):
                if ast.unparse(node.func.value) not in not_models:
                    stepping.add(_rel(p))
    assert stepping - allowed == set()
    assert "ewe/engine/loop.py" in stepping


def _calls(p: Path, names: set[str]) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
            if name in names:
                found.append(f"{_rel(p)}:{node.lineno}: {name}")
    return found


def test_one_function_prepares_every_request():
    """Runtime.prepare places passages as text, applies the chat template, appends what was
    generated and checks the context's room; Runtime.session opens the cache. No method or rewrite
    does either its own way (the benchmarks under ewe/bench/ time those primitives themselves)."""
    names = {"check_lengths", "DecodingSession", "apply_chat_template"}
    allowed = {"ewe/runtime.py", "ewe/tokens.py", "ewe/engine/session.py"}
    found = [c for p in EWE_FILES if _rel(p) not in allowed and not _rel(p).startswith("ewe/bench/")
             for c in _calls(p, names)]
    assert found == []
    assert _calls(ROOT / "ewe" / "runtime.py", {"prepare"})  # generate_plain goes through it too


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


def _module_name(p: Path) -> str:
    parts = list(p.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(p: Path, modules: set[str], on_load: bool) -> set[str]:
    """The ewe modules `p` imports: with `on_load`, those it imports when it is itself imported
    (its top-level statements, `if` and `try` blocks included); else every import it holds,
    those inside functions (run later) too."""
    name = _module_name(p)
    package = name.split(".") if p.name == "__init__.py" else name.split(".")[:-1]
    found: set[str] = set()
    tree = ast.parse(p.read_text(encoding="utf-8"))
    body = list(tree.body) if on_load else list(ast.walk(tree))
    while body:
        node = body.pop()
        if on_load and isinstance(node, (ast.If, ast.Try)):
            body += node.body + node.orelse + getattr(node, "finalbody", []) + \
                [s for h in getattr(node, "handlers", []) for s in h.body]
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name in modules}
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            source = ".".join(base + ([node.module] if node.module else [])) if node.level else node.module
            for a in node.names:
                found |= {f"{source}.{a.name}"} & modules or ({source} & modules)
    return found - {name}


@pytest.mark.parametrize("on_load", [True, False], ids=["on-load", "deferred-too"])
def test_no_import_cycles(on_load):
    """No module needs a module that needs it back: every cycle is a path from one module to
    itself in the graph of imports, those run on load and (deferred-too) those inside functions:
    a deferred import only hides a cycle from the interpreter, not from a reader."""
    modules = {_module_name(p) for p in EWE_FILES}
    graph = {_module_name(p): _imports(p, modules, on_load) for p in EWE_FILES}
    assert graph["ewe.cli"] and graph["ewe.bench.run"]  # the walk finds imports

    assert _cycles(graph) == []


def _cycles(graph: dict[str, set[str]]) -> list[str]:
    cycles, state = [], {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = "open"
        for dep in sorted(graph[node]):
            if state.get(dep) == "open":
                cycles.append(" -> ".join(path[path.index(dep):] + [dep]))
            elif dep not in state:
                visit(dep, path + [dep])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    return cycles


def test_subpackages_are_layered():
    """No subpackage imports another that imports it back, directly or through others (issue 58):
    retrieval < verify < judge < eval, controller < methods, data < judge. Imports inside
    functions count; ewe's top-level modules (runtime.py, api.py, checker_factory.py, ...) compose
    the subpackages and are left out."""
    modules = {_module_name(p) for p in EWE_FILES}
    packages = {p.parent.name for p in EWE_FILES if p.name == "__init__.py" and p.parent.parent.name == "ewe"}

    def package(module: str):
        part = module.split(".")[1] if module.count(".") else None
        return part if part in packages else None

    graph: dict[str, set[str]] = {pkg: set() for pkg in packages}
    for p in EWE_FILES:
        if (pkg := package(_module_name(p))) is not None:
            graph[pkg] |= {d for m in _imports(p, modules, on_load=False) if (d := package(m)) not in (None, pkg)}
    assert {"controller", "verify", "judge"} <= packages and graph["eval"]  # the walk finds packages and imports
    assert _cycles(graph) == []


def test_a_method_is_one_module_and_the_configuration_names_none():
    """Each built-in method's settings model is defined beside its class (adding a method touches
    its module, its config file and its test); the configuration holds only the shared sections."""
    from ewe.config import SHARED_SECTIONS, EWEConfig
    from ewe.methods.registry import BUILT_IN, method_class

    assert set(EWEConfig.model_fields) == {"method", *SHARED_SECTIONS}
    for name in BUILT_IN:
        cls = method_class(name)
        assert cls.Options is not None and cls.Options.__module__ == cls.__module__, name
        assert cls.section not in SHARED_SECTIONS, name


def test_a_configuration_is_checked_without_loading_torch():
    """Checking a configuration imports the chosen method's module: it must stay light (the
    model's libraries load when the method runs)."""
    import subprocess
    import sys

    code = ("import sys\nfrom ewe.config import EWEConfig\nfrom ewe.methods.registry import BUILT_IN\n"
            "for m in BUILT_IN:\n    EWEConfig.build({'method': m}).method_section\n"
            "print(sorted(x for x in ('torch', 'transformers') if x in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
