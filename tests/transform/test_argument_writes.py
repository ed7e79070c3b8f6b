"""argument_writes: whether a user function writes into its arguments, read from its source
(what AST mode refuses before running, or runs read-only when it cannot tell)."""
import numpy as np
import pytest

from tracegrad.transform.ast.argument_writes import NO_WRITES, UNKNOWN, WRITES, argument_writes


def element(p):
    p[0] = 1.0
    return p


def through_a_view(p):
    u = p[:, None]
    u *= 2.0
    return 0.0


def through_nested_views(p):
    u = np.expand_dims(p[1:], 0).squeeze(0)
    u += 1.0
    return 0.0


def through_rows(p):
    for row in p:
        row *= 2.0
    return 0.0


def through_unpacking(p, q):
    a, b = p, q
    b[0] = 0.0
    return a


def passes_it_to_a_writer(p):
    element(p)
    return 0.0


def copyto(p):
    np.copyto(p, p * 2.0)
    return 0.0


def out_argument(p):
    np.multiply(p, 2.0, out=p)
    return 0.0


def ufunc_at(p):
    np.add.at(p, [0, 0], 1.0)
    return 0.0


def list_append(p):
    p.append(1.0)
    return 0.0


def reads(p):
    u = p[:, None] * 2.0
    v = np.reshape(p, -1)
    return np.sum(u) + np.sum(v * v) + p.sum()


def passes_it_to_a_reader(p):
    return reads(p) + np.sum(np.tanh(p))


def rebinds_a_copy(p):
    w = p * 1.0
    w[0] = 0.0
    return w


def recursive(p, n):
    return p if n == 0 else recursive(p * 0.5, n - 1)


def calls_a_function_it_is_given(p, fn):
    return fn(p)


def calls_a_method(p, model):
    return model.loss(p)


@pytest.mark.parametrize("fn,want", [
    (element, WRITES), (through_a_view, WRITES), (through_nested_views, WRITES), (through_rows, WRITES),
    (through_unpacking, WRITES), (passes_it_to_a_writer, WRITES), (copyto, WRITES), (out_argument, WRITES),
    (ufunc_at, WRITES), (list_append, WRITES),
    (reads, NO_WRITES), (passes_it_to_a_reader, NO_WRITES), (rebinds_a_copy, NO_WRITES), (recursive, NO_WRITES),
    (calls_a_function_it_is_given, UNKNOWN), (calls_a_method, UNKNOWN),
], ids=lambda v: getattr(v, "__name__", v))
def test_argument_writes(fn, want):
    assert argument_writes(fn) == want


def test_a_function_without_source_is_unknown():
    ns = {}
    exec("def made(p):\n    return p\n", ns)
    assert argument_writes(ns["made"]) == UNKNOWN


G = np.array([1.0, 2.0, 3.0])


def writes_a_global():
    G[0] = 5.0
    return 0.0


def reads_a_global(p):
    return np.sum(G * p)


def shuffles(p):
    np.random.shuffle(p)
    return 0.0


@pytest.mark.parametrize("fn,want", [(writes_a_global, WRITES), (reads_a_global, NO_WRITES), (shuffles, WRITES)],
                         ids=lambda v: getattr(v, "__name__", v))
def test_globals_and_shuffles(fn, want):
    assert argument_writes(fn) == want


LOG = []


def logs_to_a_global_list(p):
    LOG.append(float(np.sum(p)))
    return np.sum(p * p)


def test_a_global_list_a_helper_appends_to_is_not_a_write():
    """A log kept in a global list: the caller's adjoint holds the arrays it read, not the
    list, so the helper stays transformable."""
    assert argument_writes(logs_to_a_global_list) == NO_WRITES


HELD = [np.array([1.0, 2.0, 3.0]), {"w": np.array([4.0])}]


class _Holder:
    def __init__(self):
        self.buf = np.array([1.0, 2.0])
        self.count = 0


HOLDER = _Holder()


def writes_an_item_of_a_global_list():
    HELD[0] *= 2.0
    return 0.0


def writes_into_an_item_through_a_name():
    u = HELD[1]["w"]
    u[0] = 5.0
    return 0.0


def fills_an_item():
    HELD[0].fill(0.0)
    return 0.0


def copies_into_an_item():
    np.copyto(HELD[0], 1.0)
    return 0.0


def rebinds_an_item():
    HELD[0] = np.zeros(3)
    return 0.0


def writes_a_global_objects_array():
    HOLDER.buf *= 2.0
    return 0.0


def writes_into_a_global_objects_array():
    HOLDER.buf[0] = 5.0
    return 0.0


def rebinds_a_global_objects_attribute():
    HOLDER.buf = np.zeros(2)
    return 0.0


def writes_an_arguments_attribute(o):
    o.buf *= 2.0  # an array it holds, or a number it rebinds: not known from the source
    return 0.0


def writes_through_a_view_of_a_view(p):
    p[1:][0] = 5.0
    return 0.0


def writes_a_real_part(p):
    p.real += 1.0
    return 0.0


@pytest.mark.parametrize("fn,want", [
    (writes_an_item_of_a_global_list, WRITES), (writes_into_an_item_through_a_name, WRITES),
    (fills_an_item, WRITES), (copies_into_an_item, WRITES), (rebinds_an_item, NO_WRITES),
    (writes_a_global_objects_array, WRITES), (writes_into_a_global_objects_array, WRITES),
    (rebinds_a_global_objects_attribute, NO_WRITES), (writes_an_arguments_attribute, UNKNOWN),
    (writes_through_a_view_of_a_view, WRITES), (writes_a_real_part, WRITES),
], ids=lambda v: getattr(v, "__name__", v))
def test_arrays_held_by_global_containers_and_objects(fn, want):
    """A global list's, dict's or object's arrays are what a caller may have read (``a =
    np.sum(x * HELD[0])``): a write into one in place counts as a write into a global
    array; rebinding the item or attribute (``HELD[0] = ...``) writes no array."""
    assert argument_writes(fn) == want


class _Layer:
    def __init__(self):
        self.w = np.array([1.0, 2.0, 3.0])


class _Model:
    def __init__(self):
        self.sub = _Layer()


LAYERS = [_Layer()]
MODEL = _Model()


def loops_over_held_arrays():
    for a in HELD[:1]:
        a *= 2.0
    return 0.0


def unpacks_held_arrays():
    a, b = HELD
    a *= 2.0
    return b


def writes_a_listed_objects_array():
    LAYERS[0].w *= 2.0
    return 0.0


def writes_a_nested_objects_array():
    MODEL.sub.w[0] = 5.0
    return 0.0


def writes_into_an_arguments_array(o):
    o.w[0] = 5.0
    return 0.0


def writes_an_arguments_nested_array(o):
    o.sub.w *= 2.0
    return 0.0


def appends_to_a_held_list():
    HELD.append(0.0)
    HELD.pop()
    return 0.0


@pytest.mark.parametrize("fn,want", [
    (loops_over_held_arrays, WRITES), (unpacks_held_arrays, WRITES), (writes_a_listed_objects_array, WRITES),
    (writes_a_nested_objects_array, WRITES), (writes_into_an_arguments_array, UNKNOWN),
    (writes_an_arguments_nested_array, UNKNOWN), (appends_to_a_held_list, NO_WRITES),
], ids=lambda v: getattr(v, "__name__", v))
def test_arrays_reached_through_loops_unpacking_and_nested_objects(fn, want):
    assert argument_writes(fn) == want


LATER = []  # filled after the helpers below are read


class _Slot:
    def __init__(self):
        self.w = None  # an array is put here later


SLOT = _Slot()
COUNTS = {"calls": 0}
SETTINGS = _Holder.__new__(_Holder)
SETTINGS.__dict__.update(scale=2, name="run")


def writes_what_an_empty_list_will_hold():
    for a in LATER:
        a *= 2.0
    return 0.0


def writes_what_a_placeholder_will_hold():
    SLOT.w *= 2.0
    return 0.0


def counts_its_calls():
    COUNTS["calls"] += 1
    return 0.0


def changes_a_setting():
    SETTINGS.scale += 1
    return 0.0


@pytest.mark.parametrize("fn,want", [
    (writes_what_an_empty_list_will_hold, UNKNOWN), (writes_what_a_placeholder_will_hold, UNKNOWN),
    (counts_its_calls, NO_WRITES), (changes_a_setting, NO_WRITES),
], ids=lambda v: getattr(v, "__name__", v))
def test_a_write_through_what_a_global_holds_later_is_unknown(fn, want):
    """A global list, dict or object that holds no array when the source is read may hold
    one when the helper runs (``LATER = []`` filled later, ``SLOT.w = None`` set later): a
    write through what it holds is UNKNOWN (the call then runs with what its globals hold
    read-only), not NO_WRITES. One holding numbers and strings only (a counter, settings)
    is taken to stay so."""
    assert argument_writes(fn) == want


CONFIG = {"w": np.array([1.0, 2.0]), "scale": 2.0}


def writes_what_get_hands_out():
    w = CONFIG.get("w")
    w *= 2.0
    return 0.0


def writes_the_values_of_items():
    for _, v in CONFIG.items():
        v *= 2.0
    return 0.0


def writes_into_the_values():
    for v in CONFIG.values():
        v[0] = 5.0
    return 0.0


def writes_what_a_copy_holds():
    for a in HELD.copy()[:1]:
        a *= 2.0
    return 0.0


def writes_what_getattr_hands_out():
    w = getattr(HOLDER, "buf")
    w *= 2.0
    return 0.0


def only_reads_what_get_hands_out():
    w = CONFIG.get("w")
    return float(np.sum(w))


@pytest.mark.parametrize("fn,want", [
    (writes_what_get_hands_out, WRITES), (writes_the_values_of_items, WRITES),
    (writes_into_the_values, WRITES), (writes_what_a_copy_holds, WRITES),
    (writes_what_getattr_hands_out, WRITES), (only_reads_what_get_hands_out, NO_WRITES),
], ids=lambda v: getattr(v, "__name__", v))
def test_items_handed_out_by_a_global_containers_methods(fn, want):
    """``CONFIG.get("w")``, ``.values()``, ``.items()``, ``.copy()`` and ``getattr(M, "w")``
    hand out what a global container or object holds: a write into it in place is a write
    into an array the caller may have read."""
    assert argument_writes(fn) == want
