"""Install layout: kernels/ and training/ live only inside the longred_bench namespace."""

import importlib
import subprocess
import sys


def test_no_generic_top_level_modules(tmp_path):
    # Run from an empty directory so the checkout itself is not on sys.path: this checks the
    # installation, as a user's interpreter sees it.
    probe = (
        "import importlib.util as u, longred_bench.kernels, longred_bench.training;"
        "print(u.find_spec('kernels'), u.find_spec('training'))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["None", "None"]


def test_mapped_subpackages_import():
    kernels = importlib.import_module("longred_bench.kernels")
    training = importlib.import_module("longred_bench.training")
    assert callable(kernels.relation_kl)
    assert training.__doc__
