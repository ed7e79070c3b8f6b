"""The probs-or-logits parameterization that the Bernoulli-like and categorical families
share: exactly one of ``probs`` and ``logits`` is given and stored (also as ``_param``,
which gives the parameters' shape, dtype and device); the other is computed from it on
first access. Also the two ways families reach such parameters through another
distribution: an inner :class:`Categorical`, or a relaxed distribution's base."""
from .distribution import Distribution
from .utils import broadcast_all, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["CategoricalBacked", "ProbsOrLogits", "RelaxedOfBase", "probs_or_logits"]


def probs_or_logits(probs, logits):
    """``(name, value)`` of the one parameter given, with PyTorch's error unless exactly
    one is."""
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")
    return ("probs", probs) if probs is not None else ("logits", logits)


class ProbsOrLogits:
    """Mixin (before the Distribution base) of a family given ``probs`` or ``logits``: the
    given one is stored, the other is a lazy property. ``_is_binary`` says how they relate:
    a sigmoid of log-odds (Bernoulli-like), else a softmax over the last dim."""
    _is_binary = True

    def _set_param(self, name, value):
        """Store the given parameter under its name and as ``_param``."""
        setattr(self, name, value)
        self._param = value

    def _set_broadcast_param(self, probs, logits, *others):
        """Store the one of ``probs``/``logits`` given, broadcast after ``others`` (the
        first Tensor among all of them gives numbers their dtype); the others come back
        broadcast."""
        name, param = probs_or_logits(probs, logits)
        *others, value = broadcast_all(*others, param)
        self._set_param(name, value)
        return others

    def _expanded_param(self, cls, batch_shape, _instance, others=(), event_shape=()):
        """``expand`` for these families: ``probs``/``logits`` (those present, each with
        ``event_shape`` after the batch) and the parameters named in ``others`` (scalar per
        batch entry) expanded; ``_param`` the expanded ``probs`` if present."""
        params = dict.fromkeys(others, ()) | {"probs": event_shape, "logits": event_shape}
        new = self._expanded(cls, batch_shape, _instance, params)
        new._param = new.__dict__["probs"] if "probs" in self.__dict__ else new.__dict__["logits"]
        return new

    def _new(self, *args, **kwargs):
        return self._param.new(*args, **kwargs)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=self._is_binary)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=self._is_binary)

    @property
    def param_shape(self):
        return self._param.size()


class CategoricalBacked:
    """Mixin (before the Distribution base) of a family built on an inner
    :class:`Categorical`, ``self._categorical``: its parameters are that one's, its event
    the categories."""

    def _init_categorical(self, categorical, validate_args):
        """Keep ``categorical`` and take its batch shape, with one category vector as the
        event."""
        self._categorical = categorical
        Distribution.__init__(self, categorical.batch_shape, categorical.param_shape[-1:],
                              validate_args=validate_args)

    def _expanded_categorical(self, cls, batch_shape, _instance):
        """``expand``: a ``cls`` instance over the inner categorical expanded."""
        new = self._get_checked_instance(cls, _instance)
        new._categorical = self._categorical.expand(batch_shape)
        return self._expanded(cls, batch_shape, new, {})

    def _new(self, *args, **kwargs):
        return self._categorical._new(*args, **kwargs)

    @property
    def _param(self):
        return self._categorical._param

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def param_shape(self):
        return self._categorical.param_shape


class RelaxedOfBase:
    """Mixin of a relaxed distribution defined as a transform of its base distribution
    (``base_dist``), whose ``temperature``, ``probs`` and ``logits`` it reports."""

    @property
    def temperature(self):
        return self.base_dist.temperature

    @property
    def logits(self):
        return self.base_dist.logits

    @property
    def probs(self):
        return self.base_dist.probs
