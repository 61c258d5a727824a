"""Property-based test of the whole public API: valid input gives finite output of the documented shape,
bad input gives a ValueError or TypeError that names the parameter, and no public callable is left out.

The table is in ``domains_*.py`` (see ``spec.py``).
"""
from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest
from hypothesis import HealthCheck, given, settings

import clbook

from . import domains_acl, domains_ch17, domains_core, domains_esser, domains_nonlin, domains_pokle
from .spec import Spec, call, finite

TABLE: dict[str, Spec] = {}
for _module in (domains_core, domains_acl, domains_nonlin, domains_esser, domains_pokle, domains_ch17):
    _overlap = set(TABLE) & set(_module.DOMAINS)
    assert not _overlap, f"specified twice: {sorted(_overlap)}"
    TABLE.update(_module.DOMAINS)


def public_callables() -> dict[str, object]:
    """Every public callable of clbook, by qualified name (defined in its module, not re-exported)."""
    found = {}
    for info in pkgutil.walk_packages(clbook.__path__, "clbook."):
        if any(part.startswith("_") for part in info.name.split(".")):
            continue
        module = importlib.import_module(info.name)
        names = getattr(module, "__all__", None)
        if names is None:
            names = [n for n in dir(module) if not n.startswith("_")]
        for name in names:
            obj = getattr(module, name, None)
            if callable(obj) and not inspect.ismodule(obj) and getattr(obj, "__module__", None) == info.name:
                found[f"{info.name}.{name}"] = obj
    return found


PUBLIC = public_callables()
CALLED = sorted(k for k, v in TABLE.items() if not v.exempt and k in PUBLIC)


def test_every_public_callable_has_a_spec():
    missing = sorted(set(PUBLIC) - set(TABLE))
    stale = sorted(set(TABLE) - set(PUBLIC))
    assert not missing, f"{len(missing)} public callables have no entry in tests/api/domains_*.py: {missing}"
    assert not stale, f"entries for callables that are not public (renamed or removed?): {stale}"


@pytest.mark.parametrize("qualname", CALLED)
def test_valid_input_gives_finite_output(qualname):
    spec = TABLE[qualname]
    function = PUBLIC[qualname]

    @settings(max_examples=spec.max_examples, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(spec.valid)
    def run(kwargs):
        out = call(function, kwargs)
        finite(out)
        if spec.expect is not None:
            verdict = spec.expect(out, kwargs)
            # an expectation asserts, or returns False when the output is not the documented one (``cond and None``)
            assert verdict is not False, f"{qualname}: the output is not the documented one for {kwargs}"

    run()


@pytest.mark.parametrize("qualname", sorted(k for k in CALLED if TABLE[k].invalid))
def test_bad_input_names_the_parameter(qualname):
    spec = TABLE[qualname]
    function = PUBLIC[qualname]
    for bad in spec.invalid:
        with pytest.raises(bad.error) as info:
            call(function, bad.kwargs)
        assert bad.name in str(info.value), f"{qualname}: the error does not name {bad.name!r}: {info.value}"


def test_count(capsys):
    """Not a check: prints how many callables the table covers, for the closing note."""
    called = len(CALLED)
    exempt = sum(1 for k in PUBLIC if k in TABLE and TABLE[k].exempt)
    with capsys.disabled():
        print(f"\n[api] {len(PUBLIC)} public callables: {called} called with hypothesis, {exempt} exempt with a reason")
