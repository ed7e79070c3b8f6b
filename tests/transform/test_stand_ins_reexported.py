"""NumPy's stand-ins where NumPy's functions are re-exported: a name bound to NumPy's own
function before a tape records (``from numpy import mean``, or a module holding NumPy's
namespace, as ``autograd.numpy`` does) gets the stand-in too while the tape records, so
that a list or tuple of traced values given to it is the array NumPy would make of it.
Afterwards every such name is NumPy's own function again. Values are checked against
hand-worked formulas and finite differences."""
import sys
import types

import numpy as np
import pytest
from numpy import append, mean, std, var  # (bound before any tape records)
from numpy.linalg import norm

import tracegrad as tg
from tests.transform.numeric import numeric

MODES = ["tape", "ast"]


@pytest.fixture
def reexporting():
    """A module holding NumPy's namespace (``from numpy import *`` and the rest)."""
    module = types.ModuleType("reexported_numpy_for_tests")
    vars(module).update({k: v for k, v in vars(np).items() if not k.startswith("__")})
    sys.modules[module.__name__] = module
    yield module
    del sys.modules[module.__name__]


@pytest.mark.parametrize("mode", MODES)
def test_reductions_of_lists_through_names_bound_before(mode):
    assert tg.grad(lambda x: mean([x, x + 2]), mode=mode)(0.0) == 1.0
    assert tg.grad(lambda x: mean((x, 3 * x)), mode=mode)(1.0) == 2.0
    np.testing.assert_allclose(tg.grad(lambda x: std((x, 3 * x + 2)), mode=mode)(0.5), 1.0)  # (std = x + 1)
    np.testing.assert_allclose(tg.grad(lambda x: var([x, 2 * x]), mode=mode)(3.0), 0.5 * 3.0)  # (var = x^2/4)


@pytest.mark.parametrize("mode", MODES)
def test_a_linalg_name_bound_before(mode):
    # d/dx sqrt(x^2 + (x + 2)^2) at 0 = 2 / 2; norm is numpy.linalg's, not numpy's
    assert tg.grad(lambda x: norm([x, x + 2]), mode=mode)(0.0) == 1.0
    assert norm is np.linalg.norm


@pytest.mark.parametrize("mode", MODES)
def test_append_of_lists_holding_traced_values(mode):
    def f(x):
        return np.sum(np.sin(append([x[0], 1.0], [[x[1] * x[2]]])))
    x = np.array([0.3, -0.4, 0.8])
    np.testing.assert_allclose(tg.grad(f, mode=mode)(x), numeric(f, x), rtol=1e-6)


@pytest.mark.parametrize("mode", MODES)
def test_a_module_reexporting_numpy(reexporting, mode):
    m = reexporting

    def f(x):
        return m.mean([x[0] * x[1], m.sum(x)]) + m.var((x[0], x[2]))
    x = np.array([0.5, 2.0, -1.0])
    np.testing.assert_allclose(tg.grad(f, mode=mode)(x), numeric(f, x), rtol=1e-6)
    assert m.mean is np.mean and m.var is np.var  # (NumPy's own again afterwards)


def test_the_names_are_numpys_own_after_the_trace():
    tg.grad(lambda x: mean([x, x]), mode="tape")(1.0)
    assert mean is np.mean and std is np.std and var is np.var and append is np.append
    assert globals()["mean"] is np.mean
