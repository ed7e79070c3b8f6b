"""Run a worker script of ``workers/`` on N MPI ranks (``mpiexec -n N``), with a timeout so
that a hang fails the test instead of stalling the suite. Skips, saying why, where mpi4py
or mpiexec is missing (``pip install "tracegrad[distributed]"`` installs both)."""
import importlib.util
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
WORKERS = pathlib.Path(__file__).resolve().parent / "workers"
TIMEOUT = 120


def mpiexec():
    """The mpiexec next to this Python (the venv's, from the mpich wheel), else on PATH."""
    local = pathlib.Path(sys.executable).parent / "mpiexec"
    return str(local) if local.exists() else shutil.which("mpiexec")


def missing():
    """Why the MPI tests cannot run here (None: they can)."""
    if importlib.util.find_spec("mpi4py") is None:
        return 'mpi4py is not installed (pip install "tracegrad[distributed]")'
    if mpiexec() is None:
        return 'no mpiexec found (pip install "tracegrad[distributed]" installs MPICH\'s)'
    return None


needs_mpi = pytest.mark.skipif(missing() is not None, reason=str(missing()))


def _oversubscribe():
    """Open MPI refuses more ranks than cores unless told (MPICH runs them as they come)."""
    version = subprocess.run([mpiexec(), "--version"], capture_output=True, text=True, timeout=30)
    return ["--oversubscribe"] if "Open MPI" in version.stdout + version.stderr else []


def run(n, script, *args, timeout=TIMEOUT, check=True):
    """``mpiexec -n n python script args``: the finished process (stdout and stderr as text).
    With ``check`` a non-zero exit fails the test, showing the output."""
    path = script if os.path.isabs(str(script)) else WORKERS / script
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
               PYTHONUNBUFFERED="1")
    command = [mpiexec(), "-n", str(n), *_oversubscribe(), sys.executable, str(path), *map(str, args)]
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{' '.join(command)} did not finish in {timeout} s (a hang):\n{e.stdout}\n{e.stderr}")
    if check and done.returncode != 0:
        pytest.fail(f"{' '.join(command)} exited with {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return done
