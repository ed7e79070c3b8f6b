"""The ``f`` argument of :func:`tracegrad.save` / :func:`tracegrad.load`: a path or a binary
file object, opened (or used as given), asked whether it can seek, and named in messages."""
import contextlib
import os


@contextlib.contextmanager
def opened(f, mode):
    """``f`` opened in ``mode`` when it is a path; a file object is used as it is (and left open)."""
    if isinstance(f, (str, bytes, os.PathLike)):
        path = os.fspath(f)
        parent = os.path.dirname(path)
        if "w" in mode and parent and not os.path.isdir(parent):
            raise RuntimeError(f"Parent directory {os.fsdecode(parent)} does not exist.")
        with open(path, mode) as fh:
            yield fh
    elif hasattr(f, "write" if "w" in mode else "read"):
        yield f
    else:
        need = "written" if "w" in mode else "read"
        raise TypeError(f"expected a path or a binary file object that can be {need}, "
                        f"got {type(f).__name__}")


def seekable(fh):
    try:
        return fh.seekable()
    except (AttributeError, OSError, ValueError):
        return False


def name_of(f):
    if isinstance(f, (str, bytes, os.PathLike)):
        return repr(os.fsdecode(os.fspath(f)))
    name = getattr(f, "name", None)
    return repr(name) if isinstance(name, str) else f"the {type(f).__name__} given"
