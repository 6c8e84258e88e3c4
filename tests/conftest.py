import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")




@pytest.fixture(scope="module")
def tiny():
    """An EWE on the tiny random model (tests/tiny.py), one per test module."""
    from tiny import tiny_ewe

    return tiny_ewe()


@pytest.fixture
def model_work(tiny, monkeypatch):
    """What reached the model (a forward, a unit encoding): a refusal must leave it empty."""
    calls = []
    monkeypatch.setattr(tiny.model, "forward", lambda *a, **k: calls.append("forward"))
    monkeypatch.setattr(tiny.encoder, "_encode_batch", lambda *a, **k: calls.append("encode"))
    return calls


@pytest.fixture(autouse=True)
def _torch_threads_restored():
    """A test (or a command it runs in-process, e.g. `ewe bench ... --threads 1`) that changes torch's
    thread count must not change it for the tests after it: float results depend on it."""
    import torch

    threads = torch.get_num_threads()
    yield
    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
