"""``torch.torch_version``: ``TorchVersion``, the string ``torch.__version__`` is.

Programs branch on it (``if torch.__version__ >= "1.5.0"``, ``>= (2, 0)``), comparing by
version, not by text ("2.13" is after "2.9"). tracegrad follows PyTorch 2.13's API, so its
``__version__`` is ``2.13.0+tracegrad.<its own release>``: branches choose the 2.13 code,
and the local label names tracegrad's release (:mod:`tracegrad.version`).
"""
import operator
import re

__all__ = ["TorchVersion"]

_RELEASE = re.compile(r"^\s*v?(\d+(?:\.\d+)*)([^+]*)(?:\+(.*))?\s*$")


def _key(value):
    """(release numbers without trailing zeros, whether a local label follows) of a version
    string or a tuple/list of numbers; None where it is not a version."""
    if isinstance(value, (tuple, list)):
        numbers, local = [int(v) for v in value], False
    else:
        m = _RELEASE.match(str(value))
        if m is None:
            return None
        numbers, local = [int(v) for v in m.group(1).split(".")], bool(m.group(3))
    while len(numbers) > 1 and numbers[-1] == 0:
        numbers.pop()
    return tuple(numbers), local


class TorchVersion(str):
    """A version string that compares as a version with strings, tuples and lists."""

    def _compare(self, other, op):
        a, b = _key(self), _key(other)
        if a is None or b is None:
            return NotImplemented
        return op(a, b)

    def __lt__(self, other):
        return self._compare(other, operator.lt)

    def __le__(self, other):
        return self._compare(other, operator.le)

    def __gt__(self, other):
        return self._compare(other, operator.gt)

    def __ge__(self, other):
        return self._compare(other, operator.ge)

    def __eq__(self, other):
        result = self._compare(other, operator.eq)
        return str.__eq__(self, other) if result is NotImplemented else result

    def __ne__(self, other):
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    __hash__ = str.__hash__
