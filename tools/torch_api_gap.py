"""Which public PyTorch names tracegrad lacks, namespace by namespace.

Run with PyTorch installed (``python tools/torch_api_gap.py [--names] [--only NAMESPACE]``):
for ``torch``, ``torch.nn``, ``torch.nn.functional``, ``torch.Tensor``'s methods,
``torch.optim`` and ``torch.linalg`` it lists the public names (no leading underscore)
that the matching tracegrad namespace does not have, grouped by what they are in PyTorch
(function, class, module, other value), with counts. It only reads ``dir()``: a name that
exists is not thereby checked to behave like PyTorch's (the tests do that).
"""
import argparse
import importlib
import inspect
import os
import sys
import types

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

NAMESPACES = [  # (PyTorch's, tracegrad's)
    ("torch", "tracegrad"),
    ("torch.nn", "tracegrad.nn"),
    ("torch.nn.functional", "tracegrad.nn.functional"),
    ("torch.Tensor", "tracegrad.Tensor"),
    ("torch.optim", "tracegrad.optim"),
    ("torch.linalg", "tracegrad.linalg"),
]


def resolve(path):
    """The module, or a class inside one, that a dotted path names."""
    try:
        return importlib.import_module(path)
    except ImportError:
        module, _, attr = path.rpartition(".")
        return getattr(importlib.import_module(module), attr)


def public(obj):
    return {n for n in dir(obj) if not n.startswith("_")}


def kind(value):
    if isinstance(value, types.ModuleType):
        return "module"
    if inspect.isclass(value):
        return "class"
    if callable(value):
        return "function"
    return "other"


def foreign(value):
    """Names PyTorch's modules merely import (``math``, ``np``, ``typing.Optional``)."""
    if isinstance(value, types.ModuleType):
        return not value.__name__.startswith("torch")
    return getattr(value, "__module__", None) in ("typing", "collections.abc", "dataclasses")


def gaps(theirs_path, ours_path):
    """``{kind: sorted missing names}`` and the number of public names PyTorch has there."""
    theirs, ours = resolve(theirs_path), resolve(ours_path)
    have = public(ours)
    missing = {}
    names = public(theirs)
    for name in sorted(names - have):
        try:
            value = getattr(theirs, name)
        except Exception:  # a lazy attribute that fails to load
            value = None
        if foreign(value):
            continue
        missing.setdefault(kind(value), []).append(name)
    return missing, len(names)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--names", action="store_true", help="list every missing name (default: counts and a sample)")
    parser.add_argument("--only", help="one PyTorch namespace, e.g. torch.nn.functional")
    args = parser.parse_args(argv)
    try:
        import torch  # noqa: F401
    except ImportError:
        print("PyTorch is not installed: nothing to compare against (pip install torch)")
        return 1
    total = 0
    for theirs, ours in NAMESPACES:
        if args.only and args.only != theirs:
            continue
        missing, count = gaps(theirs, ours)
        n = sum(len(v) for v in missing.values())
        total += n
        print(f"{theirs}: {n} of {count} public names missing in {ours}")
        for k in ("function", "class", "module", "other"):
            names = missing.get(k, [])
            if not names:
                continue
            shown = names if args.names else names[:12]
            more = "" if len(shown) == len(names) else f", ... (+{len(names) - len(shown)})"
            print(f"  {k} ({len(names)}): {', '.join(shown)}{more}")
    print(f"total missing: {total}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
