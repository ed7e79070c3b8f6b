"""Tests of the rule table's optional Numba kernels (tracegrad.rules.compiled): kernels
served from the first element and the first call on."""
from tracegrad.rules import compiled


def load_at_once(monkeypatch, *modules):
    """The compiled kernels of ``modules`` from the first element and the first call on (not
    once their savings would pay for loading them, see tracegrad.rules.compiled)."""
    for module in modules:
        monkeypatch.setattr(module, "NUMBA_MIN", 1)
    monkeypatch.setattr(compiled, "FIRST_LOAD_S", 0.0)
    monkeypatch.setattr(compiled, "LOAD_S", 0.0)
