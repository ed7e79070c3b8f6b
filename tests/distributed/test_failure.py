"""An uncaught exception on one rank ends the whole MPI job, with a non-zero exit and the
traceback, while the other ranks are blocked waiting for it (never a hang: the launch has a
timeout, which would fail the test)."""
import pytest

from .launch import needs_mpi, run


@needs_mpi
@pytest.mark.parametrize("where, message", [("collective", "ValueError: boom on rank 1"),
                                            ("training", "ValueError: boom on rank 1 in training")])
def test_an_exception_on_one_rank_aborts_the_job(where, message):
    done = run(4 if where == "collective" else 2, "fail.py", where, timeout=60, check=False)
    assert done.returncode != 0
    output = done.stdout + done.stderr
    assert f"[rank1]: {message}" in output
    assert "[rank1]: Traceback (most recent call last):" in output
    assert "MPI_Abort" in output
    assert "unreachable" not in output
