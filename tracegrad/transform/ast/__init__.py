"""The AST path: a function's source rewritten into its adjoint (reverse mode) or its
tangent code (forward mode), readable Python that keeps the user's names.

One module per pass: :mod:`.source` (getting and parsing the source), :mod:`.resolve`
(what names refer to), :mod:`.anf` (jumps lowered, A-normal form), :mod:`.activity`,
:mod:`.reverse` and :mod:`.forward` (the transformations, writing rules out through
:mod:`.templates`), :mod:`.saves` (the stack), :mod:`.optimize` (clean-up),
:mod:`.driver` (printing, compiling, caching) and :mod:`.front` (the callables that
``grad(f, mode="ast")`` and ``mode="auto"`` return). What the generated code calls at
run time is in :mod:`.support`.
"""
from .driver import clear_cache, grad_of
from .front import AstFunction
from .source import TransformError

__all__ = ["AstFunction", "TransformError", "grad_of", "clear_cache"]
