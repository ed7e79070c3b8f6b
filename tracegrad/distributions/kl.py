"""``kl_divergence(p, q)``: the KL divergence KL(p || q) between two distributions, by a
registry of closed forms per pair of types (``register_kl``). A pair without one is
looked up by the types' bases, the most specific registered match first.

The closed forms of a distribution family live with the family (``normal.py`` registers
nothing: the pairs are here; a module adding a family adds its pairs with
``register_kl``).
"""
import functools
import math
import warnings

import tracegrad

from .bernoulli import Bernoulli
from .categorical import Categorical
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .independent import Independent
from .normal import Normal
from .uniform import Uniform
from .utils import _sum_rightmost

__all__ = ["kl_divergence", "register_kl"]

_KL_REGISTRY = {}  # (type_p, type_q) -> function: what was registered
_KL_MEMOIZE = {}   # (type_p, type_q) -> function found for that exact pair


def register_kl(type_p, type_q):
    """Decorator registering ``fn(p, q)`` as KL(p || q) for ``p`` of ``type_p`` and ``q``
    of ``type_q`` (and their subclasses, where nothing more specific is registered)."""
    for t, which in ((type_p, "type_p"), (type_q, "type_q")):
        if not (isinstance(t, type) and issubclass(t, Distribution)):
            raise TypeError(f"Expected {which} to be a Distribution subclass but got {t}")

    def decorator(fun):
        _KL_REGISTRY[type_p, type_q] = fun
        _KL_MEMOIZE.clear()
        return fun
    return decorator


@functools.total_ordering
class _Match:
    """A registered pair, ordered by specificity (the first type decides first)."""
    __slots__ = ("types",)

    def __init__(self, *types):
        self.types = types

    def __eq__(self, other):
        return self.types == other.types

    def __le__(self, other):
        for x, y in zip(self.types, other.types):
            if not issubclass(x, y):
                return False
            if x is not y:
                break
        return True


def _dispatch_kl(type_p, type_q):
    """The most specific registered function for the pair (a warning when the order of
    the two types would pick different ones)."""
    matches = [(p, q) for p, q in _KL_REGISTRY if issubclass(type_p, p) and issubclass(type_q, q)]
    if not matches:
        return NotImplemented
    left_p, left_q = min(_Match(*m) for m in matches).types
    right_q, right_p = min(_Match(*reversed(m)) for m in matches).types
    left, right = _KL_REGISTRY[left_p, left_q], _KL_REGISTRY[right_p, right_q]
    if left is not right:
        warnings.warn(f"Ambiguous kl_divergence({type_p.__name__}, {type_q.__name__}). Please "
                      f"register_kl({left_p.__name__}, {right_q.__name__})", RuntimeWarning, stacklevel=2)
    return left


def kl_divergence(p, q):
    """KL(p || q), batched over the distributions' batch shape."""
    try:
        fun = _KL_MEMOIZE[type(p), type(q)]
    except KeyError:
        fun = _KL_MEMOIZE[type(p), type(q)] = _dispatch_kl(type(p), type(q))
    if fun is NotImplemented:
        raise NotImplementedError(f"No KL(p || q) is implemented for p type {p.__class__.__name__} and q type "
                                  f"{q.__class__.__name__}")
    return fun(p, q)


def _infinite_like(t):
    return tracegrad.full_like(t, math.inf)


def infinite_kl(p, q):
    """KL(p || q) where ``p`` puts mass where ``q`` has none (an unbounded support into a
    bounded one, the real line into the positive one...): infinite, over ``p``'s batch."""
    return _infinite_like(p.mean)


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    softplus = tracegrad.nn.functional.softplus
    t1 = p.probs * (softplus(-q.logits) - softplus(-p.logits))
    t1[q.probs == 0] = math.inf
    t1[p.probs == 0] = 0
    t2 = (1 - p.probs) * (softplus(q.logits) - softplus(p.logits))
    t2[q.probs == 1] = math.inf
    t2[p.probs == 1] = 0
    return t1 + t2


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    t = p.probs * (p.logits - q.logits)
    t[(q.probs == 0).expand_as(t)] = math.inf
    t[(p.probs == 0).expand_as(t)] = 0
    return t.sum(-1)


@register_kl(ExponentialFamily, ExponentialFamily)
def _kl_expfamily_expfamily(p, q):
    """Two members of one exponential family: the Bregman divergence of the log
    normalizer between their natural parameters."""
    if type(p) is not type(q):
        raise NotImplementedError("The cross KL-divergence between different exponential families cannot be "
                                  "computed using Bregman divergences")
    p_params = [t.detach().requires_grad_() for t in p._natural_params]
    q_params = q._natural_params
    normalizer = p._log_normalizer(*p_params)
    grads = tracegrad.autograd.grad(normalizer.sum(), p_params, create_graph=True)
    result = q._log_normalizer(*q_params) - normalizer
    for pp, qp, g in zip(p_params, q_params, grads):
        result = result - _sum_rightmost((qp - pp) * g, len(q.event_shape))
    return result


@register_kl(Independent, Independent)
def _kl_independent_independent(p, q):
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError
    return _sum_rightmost(kl_divergence(p.base_dist, q.base_dist), p.reinterpreted_batch_ndims)


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    var_ratio = (p.scale / q.scale).pow(2)
    t1 = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    result = ((q.high - q.low) / (p.high - p.low)).log()
    result[(q.low > p.low) | (q.high < p.high)] = math.inf
    return result


@register_kl(Uniform, Normal)
def _kl_uniform_normal(p, q):
    """``log(sigma sqrt(2 pi) / width) + E[(x - mu)^2] / (2 sigma^2)``: the uniform's
    variance plus the offset of its mean."""
    width = p.high - p.low
    t1 = (math.sqrt(math.pi * 2) * q.scale / width).log()
    return t1 + 0.5 * (width.pow(2) / 12 + ((p.high + p.low - 2 * q.loc) / 2).pow(2)) / q.scale.pow(2)


register_kl(Normal, Uniform)(infinite_kl)
