"""``tracegrad._functorch``: what the standalone ``functorch`` package imports from
``torch._functorch``, so that ``import functorch`` (torch 2.13's package, with tracegrad
in torch's place) works and its functorch-era API runs on tracegrad's transforms.

* :mod:`.deprecated` -- ``functorch.grad``, ``vmap``, ``jvp``, ... : the torch.func
  transforms (:mod:`tracegrad.func`) behind torch's FutureWarning saying so.
* :mod:`.make_functional` -- ``make_functional(_with_buffers)`` and
  ``combine_state_for_ensemble``, built on :func:`tracegrad.func.functional_call`.
* :mod:`.eager_transforms` -- ``functionalize`` (:mod:`tracegrad.func._functionalize` says why it is a plain call).
* :mod:`.python_key` -- ``make_fx``, which needs FX graphs tracegrad does not have: it
  imports, and refuses when called.
"""
