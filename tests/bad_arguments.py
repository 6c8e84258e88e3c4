"""benchmarks/bad_argument_probe.py, whose bad-argument cases the extension tests share, so the
probe run on a GPU machine checks the same ones (a script, not a package: loaded from its path)."""
import importlib.util
import sys
from pathlib import Path


def load_probe():
    if "bad_argument_probe" not in sys.modules:
        path = Path(__file__).resolve().parents[1] / "benchmarks" / "bad_argument_probe.py"
        spec = importlib.util.spec_from_file_location("bad_argument_probe", path)
        sys.modules[spec.name] = module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return sys.modules["bad_argument_probe"]


probe = load_probe()
