"""Custom ``autograd.Function`` classes shared by ``test_function`` and ``test_gradcheck``.

Written once against a library module (tracegrad or torch), so that
``TRACEGRAD_RUNTIME_TESTS_LIB=torch`` and the oracle tests run the very same Functions
in PyTorch. Each test module adds its own Functions next to these.
"""
import functools
import types


@functools.cache
def shared_functions(lib):
    """The custom Functions both test modules use, written once against ``lib``."""
    Function = lib.autograd.Function
    once_differentiable = lib.autograd.function.once_differentiable

    class Exp(Function):
        """The documentation's example: saves its output."""
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y

    class Cube(Function):
        """x^3 whose backward is written with differentiable operations (so second
        derivatives are right)."""
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * x * x * g

    class CubeSetup(Function):
        """x^3 in the PyTorch 2 style: forward without ctx, then setup_context."""
        @staticmethod
        def forward(x):
            return x ** 3

        @staticmethod
        def setup_context(ctx, inputs, output):
            (x,) = inputs
            ctx.save_for_backward(x)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * x * x * g

    class CubeOnce(Function):
        """x^3 whose backward is marked @once_differentiable (first derivative right)."""
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * x * x * g

    class MulAdd(Function):
        """Two inputs, two outputs: (a*b, a+b)."""
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a * b, a + b

        @staticmethod
        def backward(ctx, g_prod, g_sum):
            a, b = ctx.saved_tensors
            return g_prod * b + g_sum, g_prod * a + g_sum

    return types.SimpleNamespace(Exp=Exp, Cube=Cube, CubeSetup=CubeSetup, CubeOnce=CubeOnce, MulAdd=MulAdd)


def with_shared(lib, local_namespace):
    """``shared_functions(lib)`` plus a test module's own classes from ``local_namespace``
    (its factory's ``locals()``), as one namespace; a local class may not shadow a shared one."""
    local = {k: v for k, v in local_namespace.items() if isinstance(v, type)}
    shared = vars(shared_functions(lib))
    clash = sorted(set(local) & set(shared))
    assert not clash, f"local Functions shadow shared ones: {clash}"
    return types.SimpleNamespace(**shared, **local)
