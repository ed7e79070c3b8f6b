"""Samples for ``odeint`` (tracegrad/rules/ode.py): small systems over a few output times,
with and without extra arguments, solved to tight tolerances so that the adjoint
(reverse) and sensitivity (forward) solutions agree with each other and with finite
differences to the table's tolerances. The right-hand sides use operators only, so that
the eager second-order check (which calls them on Tensors) can run them too."""
import numpy as np

from .sampling import S

_rng = np.random.default_rng(4242)
TIGHT = (("rtol", 1e-12), ("atol", 1e-12))


def decay(y, t, rate, drive):
    """A nonlinear decay with a time-dependent drive (a vector and a 0-d argument)."""
    return -rate * y + drive * t - 0.1 * y * y


def coupled(y, t):
    """A linear coupling of the components, at a rate growing with time (no arguments)."""
    return (y.sum() - 2.0 * y) * (1.0 + 0.5 * t)


SAMPLES = {
    "odeint": [
        S(_rng.normal(size=3), np.array([0.1, 0.4, 0.9]), _rng.uniform(0.5, 1.5, 3), np.array(0.7),
          func=decay, options=TIGHT, rtol=1e-5),
        S(_rng.normal(size=2), np.array([0.0, 0.3]), func=coupled, options=TIGHT, rtol=1e-5),
        S(_rng.normal(size=2), np.array([0.2]), func=coupled, options=TIGHT, rtol=1e-5),
    ],
}

EXEMPT = {"odeint": {"0d": "y0 and t are vectors (tracegrad.scipy.integrate.odeint takes a number y0 as one)",
                     "empty": "SciPy's odeint takes no empty state"}}

NO_TORCH = {"odeint": "torch has no ODE solver"}
