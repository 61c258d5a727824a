"""Heavy experiments as importable functions with a command line.

Each module ``clbook.experiments.<name>`` has a ``run(..., quick=False)`` function and a
``main()`` for ``python -m clbook.experiments.<name> [--quick]``. Runs write their results, with
provenance (parameters, seeds, versions, date, run time), to ``--out`` (default: :func:`clbook.results.user_dir`);
the results the book shows ship in ``clbook/results/`` and are read with :func:`clbook.results.load`;
``--quick`` runs a small version for the tests.
"""
