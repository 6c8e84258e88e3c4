"""What every section of the configuration is built on: the `Settings` base (unknown keys refused,
assignments checked) and the one way a section's errors are reported. The shared sections
(config.py) and each method's own (its module, ewe/methods/registry.py) use both; this module
imports neither, so the configuration and the registry need not import each other."""
from __future__ import annotations

from pydantic import BaseModel, ConfigDict, ValidationError


class Settings(BaseModel):
    """A section of settings: unknown keys are refused, assignments checked. A method's own
    section (ewe/methods/registry.py: `Method.Options`) subclasses it in the method's module."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)


def error_lines(e: ValidationError, section: str | None = None) -> list[str]:
    """One line naming each wrong key (inside `section`, for a section checked on its own)."""
    lines = []
    for err in e.errors():
        where = ".".join(str(x) for x in ([section] if section else []) + list(err["loc"]))
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "value_error" and not isinstance(err["input"], (str, int, float, bool, type(None))):
            lines.append(f"{where + ': ' if where else ''}{msg}")  # a cross-field check: the input is a whole section
            continue
        given = f" (got {err['input']!r})" if err["type"] != "missing" else ""
        lines.append(f"{where}: {msg}{given}")
    return lines
