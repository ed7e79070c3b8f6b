"""``GradScaler``: dynamic loss scaling, as ``torch.amp.GradScaler``.

The loss is multiplied by a scale before backward; ``unscale_`` divides the gradients back
and notes whether any is inf/NaN; ``step`` skips the optimizer step when one was; ``update``
halves the scale after a skipped step and doubles it after ``growth_interval`` clean ones.
"""
import math
import warnings

from ..runtime.grad_mode import no_grad

__all__ = ["GradScaler"]

_READY, _UNSCALED, _STEPPED = 0, 1, 2


class GradScaler:
    def __init__(self, device="cuda", init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        self._device = device
        if enabled and device == "cuda":
            from .. import cuda
            if not cuda.is_available():
                warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.",
                              UserWarning, stacklevel=2)
                enabled = False
        self._enabled = enabled
        if growth_factor <= 1.0:
            raise AssertionError("The growth factor must be > 1.0.")
        if backoff_factor >= 1.0:
            raise AssertionError("The backoff factor must be < 1.0.")
        self._scale, self._growth_factor, self._backoff_factor = float(init_scale), growth_factor, backoff_factor
        self._growth_interval, self._growth_tracker = growth_interval, 0
        self._per_optimizer = {}  # id(optimizer) -> {"stage": ..., "found_inf": bool}

    def is_enabled(self):
        return self._enabled

    def scale(self, outputs):
        """``outputs`` (a tensor, or nested lists/tuples of them) times the scale."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        return outputs * self._scale

    def _state(self, optimizer):
        return self._per_optimizer.setdefault(id(optimizer), {"stage": _READY, "found_inf": False})

    def unscale_(self, optimizer):
        """Divide ``optimizer``'s gradients by the scale, in place; note inf/NaN."""
        if not self._enabled:
            return
        state = self._state(optimizer)
        if state["stage"] == _UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if state["stage"] == _STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        inv = 1.0 / self._scale
        found = False
        with no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    p.grad.mul_(inv)
                    found = found or not bool(p.grad.isfinite().all().item())
        state["stage"], state["found_inf"] = _UNSCALED, found

    def step(self, optimizer, *args, **kwargs):
        """``optimizer.step()`` unless the (unscaled) gradients hold an inf or NaN."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        state = self._state(optimizer)
        if state["stage"] == _STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] == _READY:
            self.unscale_(optimizer)
        result = None if state["found_inf"] else optimizer.step(*args, **kwargs)
        state["stage"] = _STEPPED
        return result

    def update(self, new_scale=None):
        """Back off after a skipped step, grow after ``growth_interval`` clean ones."""
        if not self._enabled:
            return
        if new_scale is not None:
            self._scale = float(new_scale.item() if hasattr(new_scale, "item") else new_scale)
        else:
            if not self._per_optimizer:
                raise AssertionError("No inf checks were recorded prior to update.")
            if any(s["found_inf"] for s in self._per_optimizer.values()):
                self._scale *= self._backoff_factor
                self._growth_tracker = 0
            else:
                self._growth_tracker += 1
                if self._growth_tracker == self._growth_interval:
                    grown = self._scale * self._growth_factor
                    self._scale = grown if math.isfinite(grown) else self._scale
                    self._growth_tracker = 0
        self._per_optimizer = {}

    def get_scale(self):
        return self._scale if self._enabled else 1.0

    def get_growth_factor(self):
        return self._growth_factor

    def set_growth_factor(self, new_factor):
        self._growth_factor = new_factor

    def get_backoff_factor(self):
        return self._backoff_factor

    def set_backoff_factor(self, new_factor):
        self._backoff_factor = new_factor

    def get_growth_interval(self):
        return self._growth_interval

    def set_growth_interval(self, new_interval):
        self._growth_interval = new_interval

    def state_dict(self):
        if not self._enabled:
            return {}
        return {"scale": self._scale, "growth_factor": self._growth_factor, "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval, "_growth_tracker": self._growth_tracker}

    def load_state_dict(self, state_dict):
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved from a "
                               "disabled instance of GradScaler.")
        self._scale = float(state_dict["scale"])
        self._growth_factor, self._backoff_factor = state_dict["growth_factor"], state_dict["backoff_factor"]
        self._growth_interval, self._growth_tracker = state_dict["growth_interval"], state_dict["_growth_tracker"]
