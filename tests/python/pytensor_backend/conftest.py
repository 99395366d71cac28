"""PyTensor's graphs through opweave (``opweave.pytensor``). These tests need
PyTensor (the ``pytensor`` extra, Python >= 3.12); elsewhere they are
skipped, and ``.ci/run`` runs them in a Python 3.12 environment."""

import ctypes.util
import os

# PyTensor finds OpenBLAS only with libgfortran's development link; name it,
# so that its BLAS ops have C code here as on a machine set up for PyTensor
# (.ci/run installs libopenblas-dev).
if ctypes.util.find_library("openblas"):
    os.environ.setdefault("PYTENSOR_FLAGS", "blas__ldflags=-lopenblas")
