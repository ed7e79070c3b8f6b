"""DistributedDataParallel's gradient averaging, overlapped with backward (torch's Reducer).

The parameters are cut into buckets of about ``bucket_cap_mb`` each (1 MB for the first),
in reverse order of ``module.parameters()``: roughly the order backward produces their
gradients. Each parameter's post-accumulate-grad hook marks it ready; when every gradient of
a bucket is there, the bucket is copied into one flat array, divided by the world size and
handed to a non-blocking MPI all-reduce while backward goes on computing the earlier layers'
gradients. A callback queued on the engine waits for all of them when backward ends and
copies the averages back into ``.grad``.

Buckets are started strictly in order, so that every rank issues the same sequence of MPI
collectives (MPI requires it) even when hooks fire in a different order. With
``find_unused_parameters`` the parameters the forward did not reach are found by walking
the output's graph and count as ready with zero gradients; each bucket then carries one
extra "used" element per parameter, so that a parameter no rank used keeps ``grad=None``."""
import numpy as np

from .. import backend
from ..runtime.engine import queue_callback
from ..runtime.tensor import Tensor, wrap
from . import _mpi
from .collectives import reduce_in_place

__all__ = ["Reducer", "bucket_assignment"]


def bucket_assignment(params, cap_bytes, first_cap_bytes):
    """Indices of ``params`` per bucket: reverse order, one dtype and device per bucket, each
    filled until it holds ``cap_bytes`` (``first_cap_bytes`` for the first)."""
    buckets, open_ = [], {}
    for i in reversed(range(len(params))):
        p = params[i]
        key = (p._data.dtype, type(p._data))
        current = open_.setdefault(key, [[], 0])
        current[0].append(i)
        current[1] += p.numel() * p._data.dtype.itemsize
        if current[1] >= (first_cap_bytes if not buckets else cap_bytes):
            buckets.append(current[0])
            del open_[key]
    buckets.extend(b for b, _ in open_.values())
    return buckets


class _Bucket:
    __slots__ = ("index", "params", "offsets", "total", "pending", "flat", "request")

    def __init__(self, index, params):
        self.index, self.params = index, params
        self.offsets = np.concatenate([[0], np.cumsum([p.numel() for p in params])]).astype(np.int64)
        self.total = int(self.offsets[-1])
        self.pending, self.flat, self.request = 0, None, None


class Reducer:
    """The gradient averaging of one DDP module (see the module docstring)."""

    def __init__(self, params, names, pg, cap_bytes, first_cap_bytes, find_unused):
        self.pg, self.names, self.find_unused = pg, names, find_unused
        self.params = params
        self.buckets = [_Bucket(k, [params[i] for i in idx])
                        for k, idx in enumerate(bucket_assignment(params, cap_bytes, first_cap_bytes))]
        self.where = {}
        for bucket in self.buckets:
            for j, p in enumerate(bucket.params):
                self.where[id(p)] = (bucket, j)
        self.expecting = False    # a synchronised backward is due (set by each DDP forward)
        self.started = False      # its first hook has fired
        self.spent = False        # the last synchronised backward has ended, no forward since
        self.unused = ()
        self.next_bucket = 0
        self.used = None
        self.handles = [p.register_post_accumulate_grad_hook(self._ready) for p in params]

    def remove_hooks(self):
        for h in self.handles:
            h.remove()

    # -- one iteration -------------------------------------------------------------------------
    def prepare_for_backward(self, outputs):
        """Called by DDP's forward: the next backward averages the gradients. With
        ``find_unused_parameters``, find those ``outputs`` do not depend on."""
        self.expecting, self.started, self.spent, self.next_bucket = True, False, False, 0
        for bucket in self.buckets:
            bucket.pending, bucket.flat, bucket.request = len(bucket.params), None, None
        self.used = set()
        if self.find_unused:
            reached = _leaves_reached(outputs)
            self.unused = [p for p in self.params if id(p) not in reached]

    def forward_without_sync(self):
        """A DDP forward under no_sync() (or without grad): its backward averages nothing."""
        self.expecting = self.spent = False

    def _ready(self, param):
        if not self.expecting:
            if self.spent:  # a second backward after one synchronised forward: its gradients
                raise RuntimeError(  # would silently stay local
                    "Expected to mark a variable ready only once. This error is caused by a second backward pass "
                    "after one DistributedDataParallel forward (backward twice with retain_graph=True), or by "
                    "using a module parameter outside the DDP module's forward. Run the DDP forward again before "
                    "each backward, or use no_sync() for the passes that must not average.")
            return  # under no_sync(), or a backward with no DDP forward before it
        if not self.started:
            self.started = True
            queue_callback(self._finish)
            for p in self.unused:
                self._mark(p, used=False)
        self._mark(param, used=True)
        requests = [b.request for b in self.buckets[:self.next_bucket] if b.request is not None]
        if requests:  # MPICH progresses non-blocking collectives inside MPI calls: give it one
            _mpi.MPI().Request.Testall(requests)

    def _mark(self, param, used):
        bucket, _ = self.where[id(param)]
        if used:
            if id(param) in self.used:
                return
            self.used.add(id(param))
        bucket.pending -= 1
        while self.next_bucket < len(self.buckets) and self.buckets[self.next_bucket].pending == 0:
            self._launch(self.buckets[self.next_bucket])
            self.next_bucket += 1

    def _launch(self, bucket):
        """Copy the bucket's gradients into one flat array (zeros for unused ones), divided by
        the world size, and start its all-reduce. (Alone, the average is the gradient itself.)"""
        if self.pg.size() == 1:
            return
        n = len(bucket.params)
        dtype = bucket.params[0]._data.dtype
        flat = np.empty(bucket.total + (n if self.find_unused else 0), dtype)
        for j, p in enumerate(bucket.params):
            part = flat[bucket.offsets[j]:bucket.offsets[j + 1]]
            g = p._grad if id(p) in self.used else None
            if g is None:
                part[...] = 0
            else:
                data = g._data
                part[...] = (data if isinstance(data, np.ndarray) else backend.namespace_of(data).to_host(data)).ravel()
            if self.find_unused:
                flat[bucket.total + j] = 1 if id(p) in self.used else 0
        np.divide(flat, self.pg.size(), out=flat)
        bucket.flat = flat
        bucket.request = reduce_in_place(self.pg, flat)

    def _finish(self):
        """End of backward: wait for every bucket and give each parameter its average."""
        self.expecting, self.spent = False, True
        launched = self.buckets[:self.next_bucket]
        _mpi.MPI().Request.Waitall([b.request for b in launched if b.request is not None])
        if self.next_bucket < len(self.buckets):
            raise RuntimeError(self._unreduced_message())
        for bucket in launched if self.pg.size() > 1 else ():
            for j, p in enumerate(bucket.params):
                if self.find_unused and bucket.flat[bucket.total + j] == 0:
                    continue  # no rank used it: its grad stays as it was
                _set_grad(p, bucket.flat[bucket.offsets[j]:bucket.offsets[j + 1]].reshape(p.shape))

    def _unreduced_message(self):
        missing = [i for i, p in enumerate(self.params) if id(p) not in self.used]
        return ("Expected to have finished reduction in the prior iteration before starting a new one. This error "
                "indicates that your module has parameters that were not used in producing loss. You can enable "
                "unused parameter detection by passing the keyword argument `find_unused_parameters=True` to "
                "`tracegrad.nn.parallel.DistributedDataParallel`, and by \nmaking sure all `forward` function outputs "
                "participate in calculating loss. \nParameter indices which did not receive grad for rank "
                f"{self.pg.rank()}: {' '.join(map(str, missing))}\nTheir names: "
                f"{', '.join(self.names[i] for i in missing)} (tracegrad raises this when the backward ends, "
                "before an optimizer step could use gradients that were not averaged)")


def _set_grad(p, averaged):
    """Write the average into ``p.grad`` (in place: the optimizer may hold it), or make a grad."""
    g = p._grad
    if g is None:
        ns = backend.namespace_of(p._data)
        p._grad = wrap(averaged.copy() if ns is backend.cpu else ns.from_host(averaged))
        return
    data = g._data
    if isinstance(data, np.ndarray):
        data[...] = averaged
    else:
        data[...] = backend.namespace_of(data).from_host(averaged)


def _leaves_reached(outputs):
    """ids of the leaf tensors whose gradient a backward from ``outputs`` would accumulate."""
    seen, reached = set(), set()
    stack = [t.grad_fn for t in outputs if isinstance(t, Tensor) and t.grad_fn is not None]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        variable = getattr(node, "variable", None)
        if variable is not None:
            reached.add(id(variable))
        stack.extend(n for n, _ in node.next_functions)
    return reached
