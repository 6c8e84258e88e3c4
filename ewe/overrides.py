"""The configuration overrides a command's options give: shared by the CLI and `ewe bench`, so
neither imports the other."""
from __future__ import annotations


def config_overrides(args) -> dict:
    """The dotted settings a command's options give (`--top-k 3`, `--set controller.max_retries=1`)."""
    import yaml

    from .config import EWEConfig

    out = {k: v for k, v in vars(args).items() if "." in k and v is not None}
    if out.get("retrieval.source") == "__none__":
        out["retrieval.source"] = None
    for item in getattr(args, "set", []) or []:
        key, sep, value = item.partition("=")
        shown = repr(item) if len(item) <= 200 else repr(item[:200]) + f" (... {len(item)} characters)"
        top_level = key.strip() in EWEConfig.model_fields and "." not in key  # e.g. method=cove
        if not sep or not key.strip() or ("." not in key and not top_level):
            raise SystemExit(f"ewe: --set {shown}: expected SECTION.KEY=VALUE, e.g. controller.max_retries=1")
        try:
            parsed = yaml.safe_load(value)
        except (yaml.YAMLError, ValueError) as e:  # ValueError: e.g. an integer of more than 4300 digits
            why = str(e).splitlines()[0][:200]
            raise SystemExit(f"ewe: --set {shown}: the value is not valid YAML ({why})") from None
        if top_level and isinstance(parsed, dict):
            # --set memory={unit_tokens: 64} sets that key; it must not replace the whole section,
            # dropping what the --config file set there
            out.update({f"{key.strip()}.{k}": v for k, v in parsed.items()})
        else:
            out[key.strip()] = parsed
    return out
