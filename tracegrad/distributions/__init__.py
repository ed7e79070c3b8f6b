"""Probability distributions (``torch.distributions``): parameterizable distributions
with sampling, reparameterized sampling (``rsample``), ``log_prob``, ``entropy`` and
``kl_divergence``, written with Tensor operations so that their gradients flow to the
parameters. Names, arguments, validation and messages follow PyTorch's.
"""
from . import constraints
from .bernoulli import Bernoulli
from .categorical import Categorical
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .independent import Independent
from .kl import kl_divergence, register_kl
from .normal import Normal
from .uniform import Uniform

__all__ = ["Bernoulli", "Categorical", "Distribution", "ExponentialFamily", "Independent", "Normal",
           "Uniform", "constraints", "kl_divergence", "register_kl"]
