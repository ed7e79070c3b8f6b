"""L-BFGS: quasi-Newton steps from the last ``history_size`` gradient differences, with a
fixed step ``lr`` or a strong-Wolfe line search; several closure evaluations per ``step``.

Ported from PyTorch's ``LBFGS`` step by step (its iteration, stopping tests and state keys:
``func_evals``, ``n_iter``, ``d``, ``t``, ``old_dirs``, ``old_stps``, ``ro``, ``H_diag``,
``prev_flat_grad``, ``prev_loss``, ``al``), on one flat vector over all parameters (complex
ones as their real pairs). Parameters are read and written through their arrays.
"""
from .. import backend
from ..runtime import grad_mode
from ..runtime.tensor import Tensor, wrap
from ._inplace import bump, real_view
from ._line_search import strong_wolfe
from .optimizer import Optimizer, check_lr

__all__ = ["LBFGS"]


class LBFGS(Optimizer):
    """Implements the L-BFGS algorithm (one parameter group; ``step`` needs a closure)."""

    def __init__(self, params, lr=1, max_iter=20, max_eval=None, tolerance_grad=1e-7, tolerance_change=1e-9,
                 history_size=100, line_search_fn=None):
        check_lr(lr)
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = {"lr": lr, "max_iter": max_iter, "max_eval": max_eval, "tolerance_grad": tolerance_grad,
                    "tolerance_change": tolerance_change, "history_size": history_size,
                    "line_search_fn": line_search_fn}
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]
        self._numel_cache = None

    def _numel(self):
        if self._numel_cache is None:
            self._numel_cache = sum(2 * p.numel() if p.is_complex() else p.numel() for p in self._params)
        return self._numel_cache

    def _gather_flat_grad(self):
        """All gradients as one new flat vector (zeros for a parameter without one)."""
        parts = []
        for p in self._params:
            data = p._data
            xp = backend.namespace_of(data)
            grad = xp.zeros_like(data) if p.grad is None else p.grad._data
            parts.append(real_view(grad).reshape(-1))
        return wrap(xp.concatenate(parts))

    def _add_grad(self, step_size, update):
        """``p += step_size * update[its slice]`` for every parameter."""
        step_size = float(step_size)
        flat = update._data
        offset = 0
        for p in self._params:
            data = real_view(p._data)
            n = data.size
            data += step_size * flat[offset:offset + n].reshape(data.shape)
            bump(p)
            offset += n
        if offset != self._numel():
            raise AssertionError(f"Expected offset {offset} to equal {self._numel()}")

    def _clone_param(self):
        return [p._data.copy() for p in self._params]

    def _set_param(self, params_data):
        for p, data in zip(self._params, params_data):
            p._data[...] = data
            bump(p)

    def _directional_evaluate(self, closure, x, t, d):
        self._add_grad(t, d)
        loss = float(_enabled(closure))
        flat_grad = self._gather_flat_grad()
        self._set_param(x)
        return loss, flat_grad

    def step(self, closure):
        """Perform a single optimization step: up to ``max_iter`` L-BFGS iterations, each
        re-evaluating ``closure`` (which must clear the gradients, compute the loss,
        backpropagate it and return it). Returns the loss before the step."""
        group = self.param_groups[0]
        lr = group["lr"]  # a Tensor lr stays one (0-d), as in PyTorch: the steps computed from it are tensors
        if isinstance(lr, Tensor) and lr.dim() != 0:
            lr = lr.squeeze()
        max_iter, max_eval = group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        line_search_fn, history_size = group["line_search_fn"], group["history_size"]

        # the state lives with the first parameter (PyTorch's layout)
        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        orig_loss = _enabled(closure)
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1

        flat_grad = self._gather_flat_grad()
        opt_cond = flat_grad.abs().max() <= tolerance_grad
        if opt_cond:  # already optimal
            return orig_loss

        d, t = state.get("d"), state.get("t")
        old_dirs, old_stps, ro = state.get("old_dirs"), state.get("old_stps"), state.get("ro")
        H_diag = state.get("H_diag")
        prev_flat_grad, prev_loss = state.get("prev_flat_grad"), state.get("prev_loss")

        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                d = flat_grad.neg()
                old_dirs, old_stps, ro = [], [], []
                H_diag = 1
            else:
                d, H_diag = _direction(state, flat_grad, prev_flat_grad, d, t, old_dirs, old_stps, ro, H_diag,
                                       history_size)
            if prev_flat_grad is None:
                prev_flat_grad = flat_grad.clone()
            else:
                prev_flat_grad.copy_(flat_grad)
            prev_loss = loss

            # the step length: a small first step (the scale is unknown), lr after
            t = min(1.0, 1.0 / flat_grad.abs().sum()) * lr if state["n_iter"] == 1 else lr
            gtd = flat_grad.dot(d)  # the directional derivative
            if gtd > -tolerance_change:
                break

            ls_func_evals = 0
            if line_search_fn is not None:
                if line_search_fn != "strong_wolfe":
                    raise RuntimeError("only 'strong_wolfe' is supported")
                x_init = self._clone_param()

                def obj_func(x, t, d):
                    return self._directional_evaluate(closure, x, t, d)

                loss, flat_grad, t, ls_func_evals = strong_wolfe(obj_func, x_init, t, d, loss, flat_grad, gtd,
                                                                 max_ls=max_eval - current_evals)
                self._add_grad(t, d)
                opt_cond = flat_grad.abs().max() <= tolerance_grad
            else:
                self._add_grad(t, d)
                if n_iter != max_iter:  # re-evaluate unless this was the last iteration
                    loss = float(_enabled(closure))
                    flat_grad = self._gather_flat_grad()
                    opt_cond = flat_grad.abs().max() <= tolerance_grad
                    ls_func_evals = 1
            current_evals += ls_func_evals
            state["func_evals"] += ls_func_evals

            if n_iter == max_iter or current_evals >= max_eval or opt_cond:
                break
            if d.mul(t).abs().max() <= tolerance_change or abs(loss - prev_loss) < tolerance_change:
                break  # too little change in the parameters or the loss

        state.update(d=d, t=t, old_dirs=old_dirs, old_stps=old_stps, ro=ro, H_diag=H_diag,
                     prev_flat_grad=prev_flat_grad, prev_loss=prev_loss)
        return orig_loss


def _enabled(closure):
    """Call the closure with grad mode on (``step`` itself runs without it)."""
    with grad_mode.enable_grad():
        return closure()


def _direction(state, flat_grad, prev_flat_grad, d, t, old_dirs, old_stps, ro, H_diag, history_size):
    """The L-BFGS descent direction: record the last step's curvature pair (when ``y.s`` is
    positive enough), then the two-loop recursion over the history. Returns ``(d, H_diag)``."""
    y = flat_grad.sub(prev_flat_grad)
    s = d.mul(t)
    ys = y.dot(s)
    if ys > 1e-10:
        if len(old_dirs) == history_size:  # a full history forgets its oldest pair
            old_dirs.pop(0)
            old_stps.pop(0)
            ro.pop(0)
        old_dirs.append(y)
        old_stps.append(s)
        ro.append(1.0 / ys)
        H_diag = ys / y.dot(y)  # the initial Hessian approximation's scale
    num_old = len(old_dirs)
    if "al" not in state:
        state["al"] = [None] * history_size
    al = state["al"]
    q = flat_grad.neg()
    for i in range(num_old - 1, -1, -1):
        al[i] = old_stps[i].dot(q) * ro[i]
        q.add_(old_dirs[i], alpha=-al[i])
    d = r = q.mul(H_diag)
    for i in range(num_old):
        be_i = old_dirs[i].dot(r) * ro[i]
        r.add_(old_stps[i], alpha=al[i] - be_i)
    return d, H_diag
