"""Every sample of the rule table, run on the device: the forward kernel, each vjp and
each jvp take device arrays and give the CPU's values. On the stub device this proves
the kernels call only ``xp`` (a NumPy call on a device array raises there)."""
import numpy as np
import pytest

from tracegrad.backend import cpu
from tracegrad.rules import TABLE
from tracegrad.rules.index import ARRAY

from . import stub_device
from ..rules import checks
from ..rules.sampling import S, ints, mask, r
from ..rules.test_complex_table import SAMPLES as COMPLEX_SAMPLES
from ..rules.test_table import COMPLEX_ONLY
from ..rules.test_table import SAMPLES as DIFFERENTIABLE_SAMPLES

_i = ints(5, 3, 4) - 2
_special = np.array([1.0, np.inf, -np.inf, np.nan, -0.5])
# the rules without a gradient (the table tests walk only the differentiable ones)
OTHER_SAMPLES = {
    **{name: [S(r(3, 4), r(4)), S(r(3, 4), 0.0)] for name in ("eq", "ne", "lt", "le", "gt", "ge")},
    **{name: [S(mask(3, 4), mask(4))] for name in ("logical_and", "logical_or", "logical_xor")},
    **{name: [S(_i, ints(4, 4))] for name in ("bitwise_and", "bitwise_or", "bitwise_xor")},
    "logical_not": [S(mask(3))], "bitwise_not": [S(_i)],
    "all": [S(mask(3, 4)), S(mask(3, 4), dim=(1,))], "any": [S(mask(3, 4)), S(mask(3, 4), dim=(0,))],
    "argmax": [S(r(3, 4)), S(r(3, 4), dim=1, keepdim=True)],
    "argmin": [S(r(3, 4)), S(r(3, 4), dim=0)],
    "isfinite": [S(_special)], "isinf": [S(_special)], "isnan": [S(_special)],
    "floor_divide": [S(r(3, 4), 0.7), S(_i, 3)], "nonzero": [S(mask(3, 4)), S(mask(5))],
    "indicator": [S(mask(3, 4), r(3, 4))], "zeros_like": [S(r(2, 3))],
    "zeros_of": [S(r(2), shape=(3, 2))], "eye_of": [S(r(2), n=3)],
    "max_pool2d_indices": [S(r(1, 2, 5, 5), kernel_size=(2, 2), stride=(2, 2), padding=(0, 0),
                             dilation=(1, 1), ceil_mode=False)],
    "kept_writes": [S(np.array([0, 2, 0, 3]), index=(ARRAY,), shape=(4,)),
                    S(np.array([1, 1]), index=(slice(None), ARRAY), shape=(2, 3))],
    "truncated_quotient": [S(r(3, 4), r(4) + 3.0)],
    "lapack_phases": [S(r(3, 3), kind="svd_u"), S(r(2, 3), kind="svd_vh")],
    # searching and counting (tracegrad/rules/counting.py)
    "searchsorted": [S(np.array([1.0, 2.0, 2.0, 3.0]), np.array([0.0, 2.0, 2.5, np.nan]), right=True),
                     S(np.sort(r(2, 4)), r(2, 3)), S(r(3), r(2), np.array([2, 0, 1]), out_int32=True)],
    "unique": [S(np.array([3, 1, 2, 3, 1])), S(_i, dim=1), S(np.array([1.0, np.nan, np.nan, 1.0]))],
    "unique_consecutive": [S(np.array([1, 1, 2, 2, 1])), S(_i, dim=0)],
    "bincount": [S(np.array([1, 1, 4])), S(np.array([0, 2]), r(2), minlength=4)],
    "histogram_counts": [S(r(10), np.linspace(-1, 1, 5)), S(r(10), np.linspace(-1, 1, 5), r(10), linear=True)],
    # integer arithmetic and bits (tracegrad/rules/special.py)
    **{name: [S(_i, ints(4, 4) - 1), S(_i, 3)] for name in ("gcd", "lcm", "bitwise_left_shift", "bitwise_right_shift")},
}
# (rules whose operands are complex only: their samples are the complex walker's)
COMPLEX_ONLY_SAMPLES = {name: COMPLEX_SAMPLES[name] for name in COMPLEX_ONLY}
SAMPLES = {**DIFFERENTIABLE_SAMPLES, **OTHER_SAMPLES, **COMPLEX_ONLY_SAMPLES}
CASES = [(name, k) for name in sorted(SAMPLES) for k in range(len(SAMPLES[name]))]
IDS = [f"{name}-{k}{SAMPLES[name][k]!r}" for name, k in CASES]


def test_every_rule_runs_on_the_device():
    assert sorted(SAMPLES) == sorted(TABLE)


def _params(name, params):
    # the device-move rule, from the device to itself
    return dict(params, device="cuda", src="cuda") if name == "to_device" else params


def _moved(xp, value):
    if isinstance(value, (np.ndarray, np.generic)):  # (NumPy kernels give scalars for 0-d)
        return xp.from_host(value)
    if isinstance(value, tuple):
        return tuple(_moved(xp, v) for v in value)
    if isinstance(value, list):
        return [_moved(xp, v) for v in value]
    return value


def _host(xp, value):
    if isinstance(value, (tuple, list)):
        return [_host(xp, v) for v in value]
    if isinstance(value, xp.ndarray):
        return xp.to_host(value)
    return value


def _same(xp, got, want, what):
    got = _host(xp, got)
    if isinstance(want, (tuple, list)):
        assert len(got) == len(want), what
        for g, w in zip(got, want):
            _same(xp, g, w, what)
        return
    if want is None:
        assert got is None, what
        return
    want = np.asarray(want)
    assert np.shape(got) == want.shape, f"{what}: shape {np.shape(got)}, CPU {want.shape}"
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-9, atol=1e-12, err_msg=what)


# Decompositions whose vectors are defined up to sign: a GPU's solver (cuSOLVER) picks
# other signs than LAPACK, and lapack_phases answers the library's own. On a real GPU
# their values are compared by magnitude, and their vjps (which depend on the signs) are
# left to the CPU and stub walkers, where both sides are LAPACK's.
SIGNS_OF_THE_SOLVER = {"eigh", "svd", "lapack_phases"}


@pytest.mark.parametrize("name,k", CASES, ids=IDS)
def test_rule_on_device_gives_the_cpu_values(xp, name, k):
    prim, sample = TABLE[name], SAMPLES[name][k]
    params = _params(name, sample.params)
    args, dev_args = list(sample.args), [_moved(xp, a) for a in sample.args]
    out = prim.impl(cpu, *args, **sample.params)
    dev_out = prim.impl(xp, *dev_args, **_moved(xp, params))
    if name in SIGNS_OF_THE_SOLVER and xp is not stub_device.stub:
        got = dev_out if isinstance(dev_out, tuple) else (dev_out,)
        want = out if isinstance(out, tuple) else (out,)
        for g, w in zip(got, want):
            np.testing.assert_allclose(np.abs(xp.to_host(g)), np.abs(w), rtol=1e-9, atol=1e-12, err_msg=name)
        return
    _same(xp, dev_out, out, f"{name} forward")
    rng = np.random.default_rng(k)
    for i in checks.diff_positions(prim, sample):
        g = checks.cotangent(prim, out, rng)
        want = checks.vjp(prim, i, g, out, args, sample.params)
        masked, out_arg = checks.vjp_operands(prim, i, dev_args, _moved(xp, out))
        dev_g = _moved(xp, g)
        fn = prim.vjp_all_fn or prim.vjps[i]
        got = fn(dev_g, out_arg, *masked, **_moved(xp, params))
        _same(xp, got[i] if prim.vjp_all_fn else got, want, f"{name} vjp {i}")
        t = checks.direction(args[i], rng)
        tangents = [None] * len(args)
        tangents[i] = t
        want = prim.apply_jvp(tuple(tangents), out, tuple(args), sample.params)
        tangents[i] = _moved(xp, t)
        got = prim.apply_jvp(tuple(tangents), _moved(xp, out), tuple(dev_args), _moved(xp, params))
        _same(xp, got, want, f"{name} jvp {i}")
