"""README.md's table of supported NumPy/SciPy functions is the registry's own list
(tools/numpy_table.py writes it): a rule added without rewriting the table fails here."""
import importlib.util
import pathlib

SCRIPT = pathlib.Path(__file__).resolve().parent.parent / "tools" / "numpy_table.py"


def test_readme_table_is_current():
    spec = importlib.util.spec_from_file_location("numpy_table", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(["--check"]) == 0, "README.md's NumPy table is out of date: run python tools/numpy_table.py"
