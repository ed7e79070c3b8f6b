"""The functorch-era names (``functorch.grad``, ``functorch.vmap``, ...), as torch 2.13
exposes them: each is the torch.func transform (here :mod:`tracegrad.func`) behind a
FutureWarning, issued on every call with torch's text, saying which torch.func name
replaces it. Their docstrings are the new API's plus that warning, as in torch."""
import functools
import textwrap
import warnings

from .. import func as _func
from . import eager_transforms as _impl
from . import make_functional as _nn_impl

__all__ = ["combine_state_for_ensemble", "functionalize", "grad", "grad_and_value", "hessian", "jacfwd",
           "jacrev", "jvp", "make_functional", "make_functional_with_buffers", "vjp", "vmap"]


def get_warning(api, new_api=None, replace_newlines=False):
    """torch's deprecation text for ``functorch.<api>`` (``new_api`` defaults to torch.func.<api>)."""
    if new_api is None:
        new_api = f"torch.func.{api}"
    warning = (
        f"We've integrated functorch into PyTorch. As the final step of the \n"
        f"integration, `functorch.{api}` is deprecated as of PyTorch \n"
        f"2.0 and will be deleted in a future version of PyTorch >= 2.3. \n"
        f"Please use `{new_api}` instead; see the PyTorch 2.0 release notes \n"
        f"and/or the `torch.func` migration guide for more details \n"
        f"https://pytorch.org/docs/main/func.migrating.html"
    )
    return warning.replace("\n", "") if replace_newlines else warning


def warn_deprecated(api, new_api=None):
    # stacklevel 3: attributed to the caller of the functorch.<api> wrapper
    warnings.warn(get_warning(api, new_api, replace_newlines=True), FutureWarning, stacklevel=3)


def _deprecated(new_impl, new_api=None):
    """Decorator: the wrapped signature-only function warns, then calls ``new_impl``."""
    def decorate(stub):
        api = stub.__name__

        @functools.wraps(stub)
        def wrapper(*args, **kwargs):
            warn_deprecated(api, new_api)
            return new_impl(*args, **kwargs)
        if new_impl.__doc__ is not None:
            note = textwrap.indent("\n.. warning::\n\n" + textwrap.indent(get_warning(api, new_api), "    "), "    ")
            wrapper.__doc__ = new_impl.__doc__ + note
        return wrapper
    return decorate


# The stubs carry torch's signatures (for help() and inspect.signature); the bodies are unused.

@_deprecated(_func.vmap, "torch.vmap")
def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None): ...


@_deprecated(_func.grad)
def grad(func, argnums=0, has_aux=False): ...


@_deprecated(_func.grad_and_value)
def grad_and_value(func, argnums=0, has_aux=False): ...


@_deprecated(_func.vjp)
def vjp(func, *primals, has_aux=False): ...


@_deprecated(_func.jvp)
def jvp(func, primals, tangents, *, strict=False, has_aux=False): ...


@_deprecated(_func.jacrev)
def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False): ...


@_deprecated(_func.jacfwd)
def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"): ...


@_deprecated(_func.hessian)
def hessian(func, argnums=0): ...


@_deprecated(_impl.functionalize)
def functionalize(func, *, remove="mutations"): ...


@_deprecated(_nn_impl.make_functional, "torch.func.functional_call")
def make_functional(model, disable_autograd_tracking=False): ...


@_deprecated(_nn_impl.make_functional_with_buffers, "torch.func.functional_call")
def make_functional_with_buffers(model, disable_autograd_tracking=False): ...


@_deprecated(_nn_impl.combine_state_for_ensemble, "torch.func.stack_module_state")
def combine_state_for_ensemble(models): ...
