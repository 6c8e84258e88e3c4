"""Methods by name. A method is built with the Runtime (never the `EWE` facade) and answers
prompts; `EWE.generate`, `ewe run` and `ewe eval` find it here by the configuration's
`method`. A method is one module: its class, its settings (a pydantic model, `Options`, read from the
configuration section named by `section`), its cross-section checks (`check_config`) and its
hooks. A new method subclasses `Method` and registers itself:

    @register
    class MyMethod(Method):
        name = "my-method"
        Options = MyOptions          # read from the configuration's `options` section
        def run(self, prompt, dec, passages=None) -> GenerationResult: ...

A built-in method's module is named in BUILT_IN; the module must import without torch (the
configuration imports it to check the method's settings; the model's libraries load when it runs).

The built-in methods are imported only when asked for, so importing ewe stays cheap. A
package can offer methods to the CLI (`ewe run --config` a YAML naming them) through the
"ewe.methods" entry point group, each imported the same way on first use.
"""
from __future__ import annotations

import importlib

from pydantic import ValidationError

from ..settings import error_lines

BUILT_IN = {  # name -> "module:class"
    "ewe": "ewe.methods.ewe:EWEMethod",
    "cove": "ewe.methods.cove:CoVe",
    "streaming-vr": "ewe.methods.verify_refine:VerifyRefine",
    "full-vr": "ewe.methods.verify_refine:FullVR",
    "a2r": "ewe.methods.a2r:A2R",
    "prefixnli": "ewe.methods.prefixnli:PrefixNLI",
}
_registered: dict[str, type] = {}


class Method:
    """A way of answering prompts on the Runtime's parts.

    Its settings are the configuration section `section`, checked by `Options` (a pydantic
    model; None: it takes no settings). A method registered outside ewe keeps the section
    `options`; the built-in ones name their own (EWE's is `controller`).
    """

    name = ""
    section = "options"
    Options: type | None = None

    def __init__(self, runtime):
        if runtime.config.method != self.name:
            raise ValueError(f"method {self.name!r} was given the configuration of method {runtime.config.method!r}")
        self.runtime = runtime
        self.options = runtime.config.method_section

    @classmethod
    def read_options(cls, given: dict | None):
        """`given` (the method's section) checked by its Options; a ValueError names each wrong key."""
        if cls.Options is None:
            if given:
                raise ValueError(f"{cls.section}: method {cls.name!r} takes none (got {', '.join(sorted(given))})")
            return None
        if given is not None and not isinstance(given, dict):
            raise ValueError(f"{cls.section}: expected a mapping of settings (got {given!r})")
        try:
            return cls.Options.model_validate(given or {})
        except ValidationError as e:
            raise ValueError("; ".join(error_lines(e, cls.section))) from None

    @classmethod
    def check_config(cls, config) -> None:
        """Refuse a configuration this method cannot run with (a ValueError saying what to set);
        the other sections are already valid on their own."""

    @classmethod
    def batches(cls, config) -> bool:
        """`run_batch` decodes its prompts as the rows of one batch (a server answers several
        requests together only with such a method; the others answer one by one)."""
        return False

    @classmethod
    def joins(cls, config) -> bool:
        """Requests may join a batch that is already decoding (`joining_loop`, continuous batching):
        a server starts a new request at the next step instead of after the whole batch."""
        return False

    def joining_loop(self, take, capacity: int, dec, hooks: list = ()):
        """The loop that answers the Requests (engine/request.py: prompt, passages, decoding,
        watchers, on_done, on_error) `take(n)` offers (up to n now; [] none) as the rows of one
        batch of at most `capacity`, each joining when a row is free (`dec`: the settings of a
        request that names none; a row may write up to its own max_new_tokens), started and not
        yet stepped: each `step_fed()` admits what `take` offers and decodes one step (the Engine,
        ewe/engine/engine.py, drives it); `hooks` see every row before the rows' own."""
        raise NotImplementedError(f"method {self.name!r} does not decode requests that join a running batch")

    @classmethod
    def pauses(cls, config) -> bool:
        """The method pauses to retrieve or to check while it writes (`ewe bench run` times such
        a method against RA built from the same configuration)."""
        return False

    @classmethod
    def checks_itself(cls, config) -> bool:
        """The method runs the fact-checker on its own answer while it writes (the scorer then
        warns when it judges with the same checker)."""
        return False

    def check_inputs(self, prompts: list[str], dec) -> None:
        """Refuse what cannot run (a prompt too long for the context), before any model work."""

    def run(self, prompt: str, dec, passages: list[str] | None = None):
        """One prompt's GenerationResult. `passages`: the prompt's passages ([] for none); None
        lets the method retrieve them as its configuration says."""
        raise NotImplementedError(f"method {self.name!r} does not implement run()")

    def run_batch(self, prompts: list[str], dec, rows: list[list[str]] | None) -> list:
        """The prompts' results, one prompt at a time unless the method batches."""
        self.check_inputs(prompts, dec)
        return [run_one(i, lambda: self.run(p, dec, None if rows is None else rows[i]))
                for i, p in enumerate(prompts)]


def run_one(index: int, answer):
    """`answer()`, the answer of prompt `index` of a batch answered one by one (a streaming
    request's watcher of that prompt sees its loop: engine/watch.py)."""
    from ..engine.watch import one_prompt

    with one_prompt(index):
        return answer()


def register(cls: type) -> type:
    """Make `cls` (a Method subclass with a `name`) available by its name."""
    if not (isinstance(cls, type) and issubclass(cls, Method) and cls.name):
        raise TypeError(f"register() takes a Method subclass with a name, got {cls!r}")
    _registered[cls.name] = cls
    return cls


ENTRY_POINTS = "ewe.methods"  # a package's methods, for the CLI: [project.entry-points."ewe.methods"] name = "module:Class"


def _installed() -> dict[str, str]:
    """Methods that installed packages declare under the "ewe.methods" entry point group."""
    from importlib.metadata import entry_points

    return {ep.name: ep.value for ep in entry_points(group=ENTRY_POINTS)}


def known(name: str) -> bool:
    """`name` is a method (the installed packages' entry points are read only for other names)."""
    return name in BUILT_IN or name in _registered or name in _installed()


def names() -> list[str]:
    return sorted(set(BUILT_IN) | set(_registered) | set(_installed()))


def section_owners(section: str) -> list[str]:
    """The built-in and registered methods whose own settings are `section` (for error messages)."""
    return [n for n in sorted(set(BUILT_IN) | set(_registered)) if method_class(n).section == section]


def section_model(section: str) -> type:
    """The settings model of a method's own section (the CLI reads its choices from it)."""
    for n in sorted(set(BUILT_IN) | set(_registered)):
        cls = method_class(n)
        if cls.section == section and cls.Options is not None:
            return cls.Options
    raise KeyError(f"no method reads a section {section!r}")


def method_class(name: str) -> type:
    """The Method registered as `name` (built-in and installed ones are imported here, on first use)."""
    if name not in _registered:
        where = BUILT_IN.get(name) or _installed().get(name)
        if where is None:
            raise ValueError(f"method {name!r} is not registered (methods: {', '.join(names())})")
        module, cls = where.split(":")
        found = getattr(importlib.import_module(module), cls)
        if getattr(found, "name", None) != name:
            raise ValueError(f"entry point {name!r} = {where!r} names a class whose name is {getattr(found, 'name', None)!r}")
        register(found)
    return _registered[name]
