"""The ``np`` of the CPU kernels: NumPy, with ``tanh`` replaced by one LLVM can vectorize.

Numba compiles ``np.tanh(x)`` on a scalar into a call of the C library's ``tanh``: one
element at a time, ~13 ns each on the development machine -- NumPy's own float64 ``tanh``
is no faster there (it is the same scalar loop), so a fused chain of ``tanh`` lines could
only save the memory passes between them (0.7-0.8x hand-written NumPy on a 20-step chain).
The ``tanh`` here is straight-line arithmetic (no call, no branch: both formulas are
computed and one is selected), which LLVM vectorizes with the loop around it: 2.6-2.9 ns
an element on one AVX2 core of that machine, in cache (NumPy's: 13.3 ns). Its
polynomials and argument reduction are ``llvm.fmuladd``: one fused multiply-add where the
CPU has them, else a multiply and an add, each rounded (the accuracy below holds both
ways). On an AVX-512 core, where NumPy's own ``tanh`` is vectorized too
(0.86 ns an element), FMA took this one from 0.80 to 0.65 ns (benchmarks/staged.py's
20-step chain is bound by it). Only float32 and float64 scalars are taken (any other type
is a Numba typing error, and the kernel's lines then run unfused).

Kernel modules import this module as ``np`` (``from tracegrad.transform import
kernel_numpy as np``): every other name is NumPy's own (module ``__getattr__``; NumPy's own also while a
tape records and NumPy's namespace holds the tape's stand-ins), so the kernel's text
reads as NumPy and Numba types it as NumPy. The kernels' on-disk cache is
keyed on this file's text too (:func:`tracegrad.transform.jit.load_kernel`): Numba's
cache does not see a change in a module a kernel imports.

Accuracy (against NumPy's ``tanh``, measured over 2.2 million points from 1e-300 to 30
and the special values): at most 2 ulp in float64, the float32 result rounded from the
float64 one; ``tanh(+-0) = +-0``, ``tanh(+-inf) = +-1``, NaN in gives NaN out. The
formulas (Cephes' ``tanh`` and ``exp``, one division for both paths):

- ``|x| < 0.625``: ``x + x z P(z) / Q(z)`` with ``z = x*x`` (a rational fit);
- else ``1 - 2t / (1 + t)`` with ``t = exp(-2|x|)`` (``|x|`` capped at 20, where tanh is
  1 in float64), the exponential as ``2**n * (q + p) / (q - p)`` over the reduced
  argument, ``2**n`` made from its bits, the sign copied from ``x``.
"""
import numpy as _numpy

from numba import types as _types
from numba.extending import intrinsic as _intrinsic, overload as _overload

# tanh x = x + x^3 P(x^2) / Q(x^2) on |x| < 0.625 (Cephes tanh.c)
_P = (-9.64399179425052238628E-1, -9.92877231001918586564E1, -1.61468768441708447952E3)
_Q = (1.0, 1.12811678491632931402E2, 2.23548839060100448583E3, 4.84406305325125486048E3)
# exp r = (q + p) / (q - p) with p = r P(r^2), q = Q(r^2), |r| <= ln(2)/2 (Cephes exp.c)
_EP = (1.26177193074810590878E-4, 3.02994407707441961300E-2, 9.99999999999999999910E-1)
_EQ = (3.00198505138664455042E-6, 2.52448340349684104192E-3, 2.27265548208155028766E-1,
       2.00000000000000000009E0)
_LN2_HI, _LN2_LO = 6.93145751953125E-1, 1.42860682030941723212E-6
_LOG2E = 1.4426950408889634073599
_SMALL, _CAP = 0.625, 20.0


def __getattr__(name):
    # NumPy's own function, also while a tape records (on any thread), when the NumPy
    # namespace holds the tape's stand-ins (np.ravel among them), which Numba cannot type
    from .tape.numpy_map.construct import numpy_own
    return numpy_own(getattr(_numpy, name))


def _tanh_ir(builder, x):
    """The IR computing tanh of the double ``x`` (see the module docstring)."""
    from llvmlite import ir
    f64, i64 = ir.DoubleType(), ir.IntType(64)

    def c(v):
        return ir.Constant(f64, v)

    def poly(z, coefficients):
        acc = c(coefficients[0])
        for k in coefficients[1:]:
            acc = builder.call(fmuladd, [acc, z, c(k)])
        return acc

    module = builder.module
    fmuladd = module.declare_intrinsic("llvm.fmuladd", [f64], ir.FunctionType(f64, [f64, f64, f64]))
    fabs = module.declare_intrinsic("llvm.fabs", [f64])
    floor = module.declare_intrinsic("llvm.floor", [f64])
    copysign = module.declare_intrinsic("llvm.copysign", [f64], ir.FunctionType(f64, [f64, f64]))
    a = builder.call(fabs, [x])
    z = builder.fmul(x, x)
    # |x| < 0.625: x + (x z P) / Q
    small_num = builder.fmul(builder.fmul(x, z), poly(z, _P))
    small_den = poly(z, _Q)
    # else: w = -2 min(|x|, 20) = n ln2 + r; exp w = 2**n (q + p) / (q - p)
    capped = builder.select(builder.fcmp_ordered("<", a, c(_CAP)), a, c(_CAP))
    w = builder.fmul(capped, c(-2.0))
    n = builder.call(floor, [builder.call(fmuladd, [w, c(_LOG2E), c(0.5)])])
    r = builder.call(fmuladd, [builder.fneg(n), c(_LN2_HI), w])
    r = builder.call(fmuladd, [builder.fneg(n), c(_LN2_LO), r])
    rr = builder.fmul(r, r)
    p = builder.fmul(r, poly(rr, _EP))
    q = poly(rr, _EQ)
    # 2**n from its bits (n in [-58, -1]: a normal number); via int32, which AVX2 converts
    biased = builder.sext(builder.fptosi(n, ir.IntType(32)), i64)
    scale = builder.bitcast(builder.shl(builder.add(biased, ir.Constant(i64, 1023)),
                                        ir.Constant(i64, 52)), f64)
    st = builder.fmul(scale, builder.fadd(q, p))  # t = st / (q - p)
    # tanh |x| = (1 - t) / (1 + t) = 1 - 2 st / (q - p + st), the sign copied from x
    big_num = builder.fneg(builder.call(copysign, [builder.fmul(st, c(2.0)), x]))
    big_den = builder.fadd(builder.fsub(q, p), st)
    small = builder.fcmp_ordered("<", a, c(_SMALL))
    ratio = builder.fdiv(builder.select(small, small_num, big_num),
                         builder.select(small, small_den, big_den))
    one = builder.call(copysign, [c(1.0), x])
    out = builder.fadd(builder.select(small, x, one), ratio)
    # tanh(+-0) is +-0 (the sum above gives +0), NaN is NaN (the capped path is finite)
    keep = builder.or_(builder.fcmp_ordered("==", x, c(0.0)), builder.fcmp_unordered("uno", x, x))
    return builder.select(keep, x, out)


@_intrinsic
def tanh(typingctx, x):
    """``np.tanh`` of a float32 or float64 scalar, vectorizable (float32 through float64)."""
    if x not in (_types.float32, _types.float64):
        return None

    def codegen(context, builder, signature, args):
        from llvmlite import ir
        value = args[0]
        if x == _types.float32:
            value = builder.fpext(value, ir.DoubleType())
        out = _tanh_ir(builder, value)
        return builder.fptrunc(out, ir.FloatType()) if x == _types.float32 else out
    return x(x), codegen


def flat_view(a):
    """A kernel's array argument as one dimension: a 1-d array as it is (any strides: the
    loop indexes it), else ``np.ravel(a)``. Numba's ravel of an array whose layout its type
    does not fix (what the kernels take) makes a new array: ~0.2 us of a 0.35 us kernel
    call on 16 floats."""
    return a if _numpy.ndim(a) == 1 else _numpy.ravel(a)


@_overload(flat_view)
def _flat_view(a):
    if isinstance(a, _types.Array) and a.ndim == 1:
        return lambda a: a
    return lambda a: _numpy.ravel(a)
