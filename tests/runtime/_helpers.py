"""Shared helpers for the eager-runtime behaviour tests.

``tg`` is the library under test (tracegrad). The hand-written expectations of the
non-oracle tests were derived from PyTorch's documented behaviour; setting the
environment variable ``TRACEGRAD_RUNTIME_TESTS_LIB=torch`` runs those same tests
against PyTorch itself, which checks the expectations (not tracegrad).
``LIB`` is the prefix that names and reprs carry (``tracegrad.float32``).
"""
import importlib
import os

import numpy as np

tg = importlib.import_module(os.environ.get("TRACEGRAD_RUNTIME_TESTS_LIB", "tracegrad"))
LIB = tg.__name__

DTYPE_NAMES = ["bool", "int32", "int64", "float16", "float32", "float64", "complex64", "complex128"]


def dname(d):
    """A dtype's name without its library prefix: ``torch.float32`` -> ``'float32'``.

    tracegrad has no complex32, so PyTorch's complex32 (float16 with a complex operand)
    reads as complex64, which is tracegrad's documented answer there."""
    name = str(d).split(".")[-1]
    return "complex64" if name == "complex32" else name


def npy(t):
    """A NumPy copy of a tracegrad or torch tensor's values (None passes through)."""
    if t is None:
        return None
    return np.array(t.detach().cpu().numpy(), copy=True)


def close(actual, expected, rtol=1e-6, atol=1e-9):
    np.testing.assert_allclose(np.asarray(actual, dtype=np.complex128 if np.iscomplexobj(actual) else np.float64),
                               np.asarray(expected), rtol=rtol, atol=atol)


def assert_same(mine, theirs, path="result", rtol=1e-6, atol=1e-9):
    """Recursively compare a tracegrad result with a torch result: tensors by dtype name,
    shape and values; sequences element-wise; numbers, strings and None by equality."""
    if theirs is None or mine is None:
        assert mine is None and theirs is None, f"{path}: {mine!r} vs {theirs!r}"
        return
    if hasattr(theirs, "detach") and hasattr(theirs, "dtype"):
        assert hasattr(mine, "detach"), f"{path}: expected a tensor, got {type(mine).__name__}"
        assert dname(mine.dtype) == dname(theirs.dtype), f"{path}: dtype {mine.dtype} vs {theirs.dtype}"
        assert tuple(mine.shape) == tuple(theirs.shape), f"{path}: shape {tuple(mine.shape)} vs {tuple(theirs.shape)}"
        a, b = npy(mine), npy(theirs)
        if a.dtype.kind == "b" or a.dtype.kind in "iu":
            np.testing.assert_array_equal(a, b, err_msg=path)
        else:
            np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=path)
        return
    if isinstance(theirs, (list, tuple)):
        assert isinstance(mine, (list, tuple)), f"{path}: expected a sequence, got {type(mine).__name__}"
        assert len(mine) == len(theirs), f"{path}: length {len(mine)} vs {len(theirs)}"
        for i, (m, t) in enumerate(zip(mine, theirs)):
            assert_same(m, t, f"{path}[{i}]", rtol, atol)
        return
    if isinstance(theirs, dict):
        assert set(mine) == set(theirs), f"{path}: keys {sorted(mine)} vs {sorted(theirs)}"
        for k in theirs:
            assert_same(mine[k], theirs[k], f"{path}[{k!r}]", rtol, atol)
        return
    if isinstance(theirs, float):
        assert mine == theirs or abs(mine - theirs) <= atol + rtol * abs(theirs), f"{path}: {mine!r} vs {theirs!r}"
        return
    assert mine == theirs, f"{path}: {mine!r} vs {theirs!r}"


def raises_like(fn_mine, fn_theirs):
    """Run both callables; return (mine_exc, theirs_exc) (None where nothing was raised)."""
    out = []
    for fn in (fn_mine, fn_theirs):
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - comparing what each library raises
            out.append(e)
        else:
            out.append(None)
    return tuple(out)


def grad_name(t):
    """``type(t.grad_fn).__name__`` or None."""
    fn = t.grad_fn
    return None if fn is None else type(fn).__name__


def src_id(fn):
    """A readable test id for a one-line lambda: its body (``b.view(-1)``)."""
    import inspect
    import re
    try:
        src = inspect.getsource(fn).strip()
    except (OSError, TypeError):
        return getattr(fn, "__name__", "case")
    src = re.sub(r"^.*?lambda [^:]*:\s*", "", src.splitlines()[0]).rstrip(",").strip()
    return src[:70] or "case"
