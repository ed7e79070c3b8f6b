"""examples/ddp_train.py on 2 MPI ranks ends with the parameters of one process trained on
the whole batches (float64: only the summation order differs), the same on both ranks."""
import re

from ..distributed.launch import ROOT, needs_mpi, run


@needs_mpi
def test_ddp_train_on_two_ranks_matches_one_process():
    done = run(2, ROOT / "examples" / "ddp_train.py")
    between = re.search(r"largest difference between ranks: (\S+)", done.stdout)
    vs_one = re.search(r"largest difference from one process on the whole batch: (\S+)", done.stdout)
    assert between and vs_one, done.stdout
    assert float(between.group(1)) == 0.0
    assert float(vs_one.group(1)) < 1e-12
    assert sorted(re.findall(r"rank (\d)/2: last loss", done.stdout)) == ["0", "1"]
