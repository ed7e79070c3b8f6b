"""Operations give PyTorch's values whatever NumPy's floating-point settings are: under
``np.seterr(all="raise")`` and under warnings made errors (pytest's ``filterwarnings =
error``), ``log(0)`` is -inf and ``0/0`` nan, forward, backward, in place and in an
optimizer's step -- and the program's own NumPy settings stay as it set them."""
import warnings

import numpy as np
import pytest

import tracegrad as tg

INF, NAN = float("inf"), float("nan")


def program():
    """Each value PyTorch computes here without a word."""
    out = {}
    x = tg.tensor([0.0, 1.0, 4.0], requires_grad=True)
    y = tg.log(x) + x.sqrt() + 1 / x
    out["forward"] = y.tolist()
    tg.where(x > 0, x.log(), tg.zeros(3)).sum().backward()  # (0 * inf in the backward: nan)
    out["backward"] = x.grad.tolist()
    w = tg.zeros(3)
    w.log_()
    out["in place"] = w.tolist()
    out["overflow"] = (tg.tensor([3e38]) * 10).tolist()
    p = tg.nn.Parameter(tg.tensor([1.0, 2.0]))
    opt = tg.optim.Adam([p], lr=0.1)
    (p * tg.tensor([INF, 1.0])).sum().backward()
    opt.step()
    out["step"] = p.tolist()
    q = tg.tensor([3e38], requires_grad=True)
    (q * 1.0).sum().backward()
    (q * 2.0).sum().backward()   # (accumulated in place: 1 + 2)
    (q * 3e38).sum().backward()
    (q * 3e38).sum().backward()  # (an overflow into the kept .grad)
    out["accumulated"] = q.grad.tolist()
    return out


EXPECTED = {"forward": [NAN, 2.0, 1.0 + 2.0 + 0.25 + float(np.log(np.float32(4.0))) - 1.0],
            "backward": [NAN, 1.0, 0.25], "in place": [-INF] * 3, "overflow": [INF],
            "accumulated": [INF]}


def same(got, want):
    np.testing.assert_array_equal(np.array(got, dtype=np.float64), np.array(want, dtype=np.float64))


def test_the_values_as_pytorch_gives_them():
    got = program()
    same(got["forward"][:2], EXPECTED["forward"][:2])
    for key in ("backward", "in place", "overflow", "accumulated"):
        same(got[key], EXPECTED[key])
    assert np.isnan(got["step"][0]) and got["step"][1] == pytest.approx(1.9)


@pytest.mark.parametrize("setting", ["numpy raises", "warnings are errors"])
def test_numpys_settings_change_nothing(setting):
    want = program()
    before = np.geterr()
    with warnings.catch_warnings():
        if setting == "warnings are errors":
            warnings.simplefilter("error")
            got = program()
        else:
            with np.errstate(all="raise"):
                got = program()
                assert np.geterr() == {"divide": "raise", "over": "raise", "under": "raise", "invalid": "raise"}
    assert np.geterr() == before
    assert str(got) == str(want)


def test_the_programs_own_numpy_code_still_raises():
    """A custom Function's backward is the program's code: NumPy's setting holds there."""
    class Log(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.log()

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return tg.tensor(np.divide(g.detach().numpy(), x.detach().numpy()))

    x = tg.tensor([0.0, 1.0], requires_grad=True)
    y = Log.apply(x)
    with np.errstate(all="raise"):
        assert y.tolist()[0] == -INF
        with pytest.raises(FloatingPointError):
            y.sum().backward()
        with pytest.raises(FloatingPointError):
            np.log(np.zeros(1))
