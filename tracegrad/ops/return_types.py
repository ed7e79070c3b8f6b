"""Named results such as ``max(x, dim)``'s ``(values, indices)``, printed like PyTorch's."""
import collections

__all__ = ["aminmax", "cummax", "cummin", "histogram", "histogramdd", "kthvalue", "max", "median", "min", "mode",
           "nanmedian", "sort", "topk"]


def _structseq(name, fields):
    base = collections.namedtuple(name, fields)

    def __repr__(self):
        body = ",\n".join(f"{f}={getattr(self, f)!r}" for f in fields)
        return f"tracegrad.return_types.{name}(\n{body})"

    return type(name, (base,), {"__slots__": (), "__repr__": __repr__,
                                "__module__": "tracegrad.return_types"})


max = _structseq("max", ["values", "indices"])
min = _structseq("min", ["values", "indices"])
sort = _structseq("sort", ["values", "indices"])
topk = _structseq("topk", ["values", "indices"])
mode = _structseq("mode", ["values", "indices"])
median = _structseq("median", ["values", "indices"])
nanmedian = _structseq("nanmedian", ["values", "indices"])
kthvalue = _structseq("kthvalue", ["values", "indices"])
histogram = _structseq("histogram", ["hist", "bin_edges"])
histogramdd = _structseq("histogramdd", ["hist", "bin_edges"])  # bin_edges: a tuple, one per dimension
cummax = _structseq("cummax", ["values", "indices"])
cummin = _structseq("cummin", ["values", "indices"])
aminmax = _structseq("aminmax", ["min", "max"])

_OUT_TYPES = {}


def out_type(name):
    """The named result of ``name`` called with ``out=`` (PyTorch's ``max_out``, ``sort_out``...)."""
    cls = _OUT_TYPES.get(name)
    if cls is None:
        cls = _OUT_TYPES[name] = _structseq(name + "_out", list(globals()[name]._fields))
    return cls
