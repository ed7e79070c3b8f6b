"""Whether a Tensor is one sample of a ``vmap`` batch (tracegrad.func's BatchedTensor).

Such a tensor's ``_data`` is sample 0 of its batch, kept so that shapes and dtypes answer
per sample; code that reads values from ``_data`` outside the batching rules asks this
first, then computes through operations (which batch) or refuses by name. The test is a
class attribute, so the runtime needs no import of tracegrad.func.
"""

__all__ = ["is_vmapped"]


def is_vmapped(t):
    return getattr(type(t), "_vmap_batched", False)
