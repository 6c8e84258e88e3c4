"""Methods by name. A method is built with the Runtime (never the `EWE` facade) and answers
prompts; `EWE.generate`, `ewe run` and `ewe eval` find it here by the configuration's
`method`. A new method subclasses `Method` and registers itself:

    @register
    class MyMethod(Method):
        name = "my-method"
        def run(self, prompt, dec, passages=None) -> GenerationResult: ...

The built-in methods are imported only when asked for, so importing ewe stays cheap.
"""
from __future__ import annotations

import importlib

BUILT_IN = {  # name -> "module:class"
    "ewe": "ewe.controller.method:EWEMethod",
    "cove": "ewe.methods.cove:CoVe",
    "streaming-vr": "ewe.methods.verify_refine:VerifyRefine",
    "full-vr": "ewe.methods.verify_refine:FullVR",
    "a2r": "ewe.methods.a2r:A2R",
}
_registered: dict[str, type] = {}


class Method:
    """A way of answering prompts on the Runtime's parts."""

    name = ""

    def __init__(self, runtime):
        if runtime.config.method != self.name:
            raise ValueError(f"method {self.name!r} was given the configuration of method {runtime.config.method!r}")
        self.runtime = runtime

    def check_inputs(self, prompts: list[str], dec) -> None:
        """Refuse what cannot run (a prompt too long for the context), before any model work."""

    def run(self, prompt: str, dec, passages: list[str] | None = None):
        """One prompt's GenerationResult. `passages`: the prompt's passages ([] for none); None
        lets the method retrieve them as its configuration says."""
        raise NotImplementedError(f"method {self.name!r} does not implement run()")

    def run_batch(self, prompts: list[str], dec, rows: list[list[str]] | None) -> list:
        """The prompts' results, one prompt at a time unless the method batches."""
        self.check_inputs(prompts, dec)
        return [self.run(p, dec, None if rows is None else rows[i]) for i, p in enumerate(prompts)]


def register(cls: type) -> type:
    """Make `cls` (a Method subclass with a `name`) available by its name."""
    if not (isinstance(cls, type) and issubclass(cls, Method) and cls.name):
        raise TypeError(f"register() takes a Method subclass with a name, got {cls!r}")
    _registered[cls.name] = cls
    return cls


def names() -> list[str]:
    return sorted(set(BUILT_IN) | set(_registered))


def method_class(name: str) -> type:
    """The Method registered as `name` (built-in ones are imported here, on first use)."""
    if name not in _registered:
        if name not in BUILT_IN:
            raise ValueError(f"method {name!r} is not registered (methods: {', '.join(names())})")
        module, cls = BUILT_IN[name].split(":")
        register(getattr(importlib.import_module(module), cls))
    return _registered[name]
