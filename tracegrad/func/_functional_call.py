"""``functional_call``: run a module with some of its parameters and buffers replaced by
given tensors (which transforms can then differentiate or batch), and
``stack_module_state`` for ensembles. The replacement is undone when the call returns."""
from ..runtime.tensor import Tensor

__all__ = ["functional_call", "stack_module_state"]


def _locations(module):
    """name -> (owning module, store name, attribute) for every parameter and buffer,
    shared ones under each of their names; and the names grouped by tensor (ties)."""
    where, ties = {}, {}
    for prefix, m in module.named_modules(remove_duplicate=False):
        for store in ("_parameters", "_buffers"):
            for name, value in getattr(m, store).items():
                full = f"{prefix}.{name}" if prefix else name
                where[full] = (m, store, name)
                if value is not None:
                    ties.setdefault(id(value), []).append(full)
    return where, ties


def _merge(dicts):
    if isinstance(dicts, dict):
        return dict(dicts)
    merged = {}
    for d in dicts:
        repeated = [k for k in d if k in merged]
        if repeated:
            raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of functional call is ambiguous")
        merged.update(d)
    return merged


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights=True,
                    strict=False):
    """``module(*args, **kwargs)`` with the named parameters and buffers replaced."""
    values = _merge(parameter_and_buffer_dicts)
    where, ties = _locations(module)
    if tie_weights:
        for names in ties.values():
            given = [n for n in names if n in values]
            if len(given) > 1 and any(values[n] is not values[given[0]] for n in given[1:]):
                raise ValueError(f"functional_call got multiple values for keys {given}, which are tied. "
                                 "Consider using tie_weights=False")
            if given:
                for n in names:
                    values.setdefault(n, values[given[0]])
    if strict:
        unexpected = [k for k in values if k not in where]
        missing = [k for k, (m, store, attr) in where.items()  # (an empty slot, bias=False,
                   if k not in values and getattr(m, store)[attr] is not None]  # is not missing)
        if unexpected or missing:
            lines = [f"Error(s) in reparametrizing for {type(module).__name__}:"]
            if unexpected:
                lines.append("\tUnexpected key(s): " + ", ".join(f"'{k}'" for k in unexpected) + ".")
            if missing:
                lines.append("\tMissing key(s): " + ", ".join(f"'{k}'" for k in missing) + ".")
            raise RuntimeError("\n\t".join(lines[:1]) + "\n" + "\n".join(lines[1:]))
    saved = []  # (container, name, old value): a module store (a dict), or a module attribute
    try:
        for name, value in values.items():
            if name in where:
                m, store, attr = where[name]
                members = getattr(m, store)
                saved.append((members, attr, members[attr]))
                members[attr] = value  # (the store mirrors it into the module's __dict__)
            else:
                owner, _, attr = name.rpartition(".")
                m = module.get_submodule(owner) if owner else module
                if isinstance(getattr(type(m), attr, None), property):  # (a parametrized tensor:
                    old = getattr(m, attr)                               # set through its
                    setattr(m, attr, value)                              # setter, as PyTorch does)
                    saved.append((m, attr, _PROPERTY, old))
                    continue
                saved.append((m, attr, _ABSENT))
                object.__setattr__(m, attr, value)
        if args is None:
            args = ()
        elif not isinstance(args, tuple):
            args = (args,)
        return module(*args, **(kwargs or {}))
    finally:
        for container, attr, old, *value in reversed(saved):
            if old is _ABSENT:
                object.__delattr__(container, attr)
            elif old is _PROPERTY:
                setattr(container, attr, value[0])
            else:
                container[attr] = old


_ABSENT = object()
_PROPERTY = object()  # (a property's value was set through it: put back the same way)


def stack_module_state(models):
    """(params, buffers): each parameter and buffer of identically built ``models`` stacked
    along a new dim 0 (new leaves; the parameters require grad), for ``vmap`` over an ensemble."""
    from ..ops.shape import stack
    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if len({m.training for m in models}) > 1:
        raise RuntimeError("stack_module_state: Expected all models to have the same training/eval mode.")
    if len({type(m) for m in models}) > 1:
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")

    def stacked(named):
        names = [n for n, _ in named(models[0])]
        out = {}
        for n in names:
            parts = [dict(named(m))[n] for m in models]
            t = stack([p.detach() for p in parts], 0)
            out[n] = t.requires_grad_(parts[0].requires_grad) if isinstance(parts[0], Tensor) else t
        return out
    return stacked(lambda m: m.named_parameters()), stacked(lambda m: m.named_buffers())
