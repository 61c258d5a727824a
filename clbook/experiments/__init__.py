"""Heavy experiments as importable functions with a command line.

Each module ``clbook.experiments.<name>`` has a ``run(..., quick=False)`` function and a
``main()`` for ``python -m clbook.experiments.<name> [--quick]``. Full runs write their
results, with provenance (parameters, seeds, versions, date, run time), to ``book/data/``;
``--quick`` runs a small version for the tests.
"""
