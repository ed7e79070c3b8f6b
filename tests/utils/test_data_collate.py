"""default_collate / default_convert: every kind of sample against torch's output (types,
dtypes, shapes and values), and the errors torch raises."""
import collections

import numpy as np
import pytest

import tracegrad
from tracegrad.utils.data import default_collate, default_convert
from tracegrad.utils.data.collate import collate, default_collate_fn_map

from .data_helpers import plain

Point = collections.namedtuple("Point", ["x", "y"])

# each case builds a batch (a list of samples) with the tensor library it is given
BATCHES = {
    "tensors": lambda L: [L.tensor([1.0, 2.0]), L.tensor([3.0, 4.0])],
    "int_tensors_2d": lambda L: [L.arange(6).reshape(2, 3), L.arange(6, 12).reshape(2, 3)],
    "scalar_tensors": lambda L: [L.tensor(1.5), L.tensor(2.5)],
    "python_floats": lambda L: [1.5, 2.0, -3.25],
    "python_ints": lambda L: [1, 2, 3],
    "int_then_float": lambda L: [1, 2.5],
    "float_then_int": lambda L: [1.5, 2],
    "bools": lambda L: [True, False, True],
    "strings": lambda L: ["a", "bc"],
    "bytes": lambda L: [b"a", b"b"],
    "numpy_arrays": lambda L: [np.array([1.0, 2.0], dtype=np.float32), np.array([3.0, 4.0], dtype=np.float32)],
    "numpy_int_arrays": lambda L: [np.arange(3), np.arange(3, 6)],
    "numpy_0d": lambda L: [np.array(1.0), np.array(2.0)],
    "numpy_scalars": lambda L: [np.float32(1), np.float32(2)],
    "numpy_int32_scalars": lambda L: [np.int32(1), np.int32(2)],
    "numpy_bool_scalars": lambda L: [np.bool_(True), np.bool_(False)],
    "dicts": lambda L: [{"a": 1, "b": L.tensor([1.0])}, {"a": 2, "b": L.tensor([2.0])}],
    "ordered_dicts": lambda L: [collections.OrderedDict(z=1.0, a="s"), collections.OrderedDict(z=2.0, a="t")],
    "tuples": lambda L: [(0, 1.0, "a"), (2, 3.0, "b")],
    "lists": lambda L: [[0, 1], [2, 3]],
    "namedtuples": lambda L: [Point(1, L.tensor([1.0])), Point(2, L.tensor([2.0]))],
    "nested": lambda L: [({"img": np.zeros((2, 2)), "lbl": [1, (2, 3)]}, "x"),
                         ({"img": np.ones((2, 2)), "lbl": [4, (5, 6)]}, "y")],
    "tensor_dataset_rows": lambda L: [(L.tensor([1.0, 2.0]), L.tensor(0)), (L.tensor([3.0, 4.0]), L.tensor(1))],
}

# single samples for default_convert
SAMPLES = {
    "int": lambda L: 3,
    "float": lambda L: 2.5,
    "string": lambda L: "abc",
    "numpy_array": lambda L: np.array([1, 2]),
    "numpy_float64": lambda L: np.float64(1.0),
    "numpy_str_": lambda L: np.str_("a"),
    "numpy_string_array": lambda L: np.array(["a", "b"]),
    "tensor": lambda L: L.tensor([1.0]),
    "tuple": lambda L: (np.array([1]), "a", 3),
    "list": lambda L: [np.array([1.0]), [np.array(2)]],
    "dict": lambda L: {"a": np.array([1, 2]), "b": "s"},
    "namedtuple": lambda L: Point(np.array(0), np.array(1)),
}


@pytest.mark.torch
@pytest.mark.parametrize("name", BATCHES)
def test_default_collate_matches_torch(name):
    import torch
    from torch.utils.data import default_collate as torch_collate
    assert plain(default_collate(BATCHES[name](tracegrad))) == plain(torch_collate(BATCHES[name](torch)))


@pytest.mark.torch
@pytest.mark.parametrize("name", SAMPLES)
def test_default_convert_matches_torch(name):
    import torch
    from torch.utils.data import default_convert as torch_convert
    assert plain(default_convert(SAMPLES[name](tracegrad))) == plain(torch_convert(SAMPLES[name](torch)))


def test_default_collate_by_hand():
    """Without torch: the documented mapping of types."""
    out = default_collate([1.5, 2.0])
    assert out.dtype == tracegrad.float64 and out.tolist() == [1.5, 2.0]
    assert default_collate([1, 2]).dtype == tracegrad.int64
    assert default_collate([True, False]).dtype == tracegrad.bool
    assert default_collate(["a", "b"]) == ["a", "b"]
    x, y = tracegrad.ones(2, 3), tracegrad.zeros(2, 3)
    stacked = default_collate([x, y])
    assert stacked.shape == (2, 2, 3) and stacked[0].tolist() == x.tolist() and stacked[1].tolist() == y.tolist()
    out = default_collate([Point(1, 2), Point(3, 4)])
    assert type(out) is Point and out.x.tolist() == [1, 3] and out.y.tolist() == [2, 4]
    out = default_collate([(1, "a"), (2, "b")])
    assert isinstance(out, list) and out[0].tolist() == [1, 2] and out[1] == ("a", "b")  # the transposed column, as torch returns it
    out = default_collate([{"k": np.float32(1)}, {"k": np.float32(2)}])
    assert out["k"].dtype == tracegrad.float32


def test_collate_keeps_gradients_flowing():
    """Stacking is a differentiable op: a loss on the batch reaches the samples."""
    a = tracegrad.tensor([1.0, 2.0], requires_grad=True)
    b = tracegrad.tensor([3.0, 4.0], requires_grad=True)
    (default_collate([a, b]) * tracegrad.tensor([[1.0, 1.0], [2.0, 2.0]])).sum().backward()
    assert a.grad.tolist() == [1.0, 1.0] and b.grad.tolist() == [2.0, 2.0]


BAD_BATCHES = {
    "object": lambda L: [object(), object()],
    "none": lambda L: [None, None],
    "numpy_strings": lambda L: [np.array(["a"]), np.array(["b"])],
    "numpy_objects": lambda L: [np.array([object()]), np.array([object()])],
    "ragged_lists": lambda L: [[1, 2], [3]],
    "ragged_tensors": lambda L: [L.ones(2), L.ones(3)],
}


def _error(f):
    with pytest.raises(Exception) as info:
        f()
    return type(info.value), str(info.value).replace("torch.", "").replace("tracegrad.", "")


@pytest.mark.torch
@pytest.mark.parametrize("name", BAD_BATCHES)
def test_collate_errors_match_torch(name):
    import torch
    from torch.utils.data import default_collate as torch_collate
    ours = _error(lambda: default_collate(BAD_BATCHES[name](tracegrad)))
    theirs = _error(lambda: torch_collate(BAD_BATCHES[name](torch)))
    assert ours == theirs


def test_collate_error_message():
    with pytest.raises(TypeError, match=r"^default_collate: batch must contain tensors, numpy arrays, numbers, "
                                        r"dicts or lists; found <class 'object'>$"):
        default_collate([object()])
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal size"):
        default_collate([[1, 2], [3]])


def test_collate_fn_map_is_extensible():
    """As torch documents: an entry for a type is used for it (and its subclasses)."""
    class Box:
        def __init__(self, v):
            self.v = v

    def collate_box(batch, *, collate_fn_map):
        return sum(b.v for b in batch)

    custom = {**default_collate_fn_map, Box: collate_box}
    assert collate([(Box(1), 2.0), (Box(3), 4.0)], collate_fn_map=custom)[0] == 4


def test_private_utils_path_is_the_same_module():
    """``torch.utils.data._utils.collate``, where PyTorch's default_collate documentation
    says to register a collate function: the same table as ``utils.data.collate``'s."""
    from tracegrad.utils.data._utils import pin_memory, worker
    from tracegrad.utils.data._utils.collate import collate as private_collate
    from tracegrad.utils.data._utils.collate import default_collate_fn_map as private_map

    assert private_collate is collate and private_map is default_collate_fn_map
    assert worker.get_worker_info() is None
    from tracegrad.utils.data import collate as module
    assert pin_memory.pin_memory is module.pin_memory
