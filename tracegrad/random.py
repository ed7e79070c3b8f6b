"""``tracegrad.random``: the default generators' states, as ``torch.random`` has them.

A state is the device's NumPy/CuPy bit generator state (a small dict), carried in a uint8
tensor (its JSON text) so that ``get_rng_state()`` / ``set_rng_state(state)`` round-trip the
way PyTorch programs use them; it is not PyTorch's byte layout (a Mersenne Twister's).
:func:`fork_rng` is what activation checkpointing uses to replay a forward's random draws.
"""
import contextlib
import json

from . import backend
from .runtime.creation import initial_seed, manual_seed, seed
from .runtime.tensor import Tensor, wrap

__all__ = ["get_rng_state", "set_rng_state", "fork_rng", "manual_seed", "seed", "initial_seed",
           "device_rng_state", "rng_state", "set_device_rng_state", "replay_point", "replaying", "state_tensor", "state_of"]


def device_rng_state(ns):
    """The state of namespace ``ns``'s default generator (see :func:`rng_state`)."""
    return rng_state(ns.rng(), ns.name)


def rng_state(rng, device_name):
    """The state of generator ``rng`` (a plain dict), or an error naming the device when the
    generator cannot report one (CuPy's cannot)."""
    state = getattr(getattr(rng, "bit_generator", None), "state", None)
    if not isinstance(state, dict):
        raise NotImplementedError(f"tracegrad cannot read the random state of the {device_name} "
                                  "device's generator")
    return state


def set_device_rng_state(ns, state):
    ns.rng().bit_generator.state = state


def _readable(ns):
    return isinstance(getattr(getattr(ns.rng(), "bit_generator", None), "state", None), dict)


def _use_generator(ns, generator):
    """Make ``generator`` ``ns``'s default again (backends keep it in ``_rng``)."""
    ns._rng = generator


def _fresh_seed(ns):
    return int(ns.rng().integers(0, 2 ** 62))


def replay_point(ns):
    """A token from which :func:`replaying` can draw ``ns``'s next random numbers again:
    its state where the generator reports one (NumPy); otherwise (CuPy) the device is
    reseeded now from its own stream and the token is that seed."""
    if _readable(ns):
        return ("state", device_rng_state(ns))
    seed = _fresh_seed(ns)
    ns.seed(seed)
    return ("seed", seed)


@contextlib.contextmanager
def replaying(points):
    """Run the body drawing, on each device, the numbers drawn after its ``points`` entry
    (``(ns, token)`` pairs from :func:`replay_point`); the streams are as before afterwards."""
    undo = []
    for ns, (kind, value) in points:
        if kind == "state":
            undo.append((ns, kind, device_rng_state(ns)))
            set_device_rng_state(ns, value)
        else:
            undo.append((ns, kind, ns.rng()))
            ns.seed(value)
    try:
        yield
    finally:
        for ns, kind, value in undo:
            if kind == "state":
                set_device_rng_state(ns, value)
            else:
                _use_generator(ns, value)


def get_rng_state():
    """The CPU default generator's state, as a uint8 tensor (see the module docstring)."""
    return state_tensor(device_rng_state(backend.cpu))


def set_rng_state(new_state):
    """Restore a state :func:`get_rng_state` returned."""
    set_device_rng_state(backend.cpu, state_of(new_state, "set_rng_state"))


def state_tensor(state):
    """A bit generator's state (a dict) carried in a uint8 tensor: its JSON text."""
    text = json.dumps(state).encode()
    return wrap(backend.cpu.frombuffer(text, dtype=backend.cpu.uint8).copy())


def state_of(new_state, caller):
    """The dict :func:`state_tensor` carried in ``new_state``; PyTorch's TypeError for a
    tensor that is not a ByteTensor, a RuntimeError for one that carries no state."""
    if not isinstance(new_state, Tensor) or new_state.dtype.name != "uint8":
        raise TypeError("expected a torch.ByteTensor, but got "
                        f"{type(new_state).__name__ if not isinstance(new_state, Tensor) else new_state.dtype}")
    try:
        state = json.loads(bytes(backend.cpu.asarray(new_state.numpy())))
        if not isinstance(state, dict) or "bit_generator" not in state:
            raise ValueError("no bit generator named")
        return state
    except (ValueError, TypeError) as e:
        raise RuntimeError(f"{caller}: not a state returned by get_rng_state or get_state ({e})") from None


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices", device_type="cuda"):
    """Run the body with the random states of the CPU and of every loaded device saved
    before and restored after (``devices`` is accepted for PyTorch's signature: each
    device type has one default stream here, so all of them are forked). A device whose
    generator cannot report its state (CuPy) runs the body on a stream seeded from its own,
    which is one draw further on afterwards."""
    if not enabled:
        yield
        return
    points = []
    for ns in backend.loaded():  # a device whose state cannot be read forks a seeded stream
        points.append((ns, ("state", device_rng_state(ns)) if _readable(ns) else ("seed", _fresh_seed(ns))))
    with replaying(points):
        yield
