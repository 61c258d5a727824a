"""``python -m clbook.experiments.landscape ...``: runs :func:`clbook.experiments.landscape.cli.main`.

This file runs as ``__main__`` but defines nothing: the jobs' function (``training.train_job``) and the autograd
classes live in the package's modules, so worker processes (loky, Dask) unpickle them by their module names.
"""
import sys

from clbook.experiments.landscape.cli import main

sys.exit(main())
