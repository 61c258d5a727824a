"""No module of clbook reaches into another module's private names (CONTRIBUTING.md, 'Where code goes').

A helper that two modules share is a public name: in the module's ``__all__`` when it is part of the API, outside it
(with a docstring) when it is an unchecked kernel for the package's own loops, or a public name of a private module
(``clbook._validate``, ``clbook.losses._safe``). A name that starts with one underscore belongs to its own module.
"""
from __future__ import annotations

import ast
from pathlib import Path

import clbook

ROOT = Path(clbook.__file__).parent


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _resolve(path: Path, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    package = _module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    base = package[: len(package) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def violations(path: Path, text: str | None = None) -> list[str]:
    """The private names of other clbook modules that the module at ``path`` (or ``text`` as if it were there) uses."""
    tree = ast.parse(path.read_text() if text is None else text, filename=str(path))
    found, modules = [], set()  # names bound to clbook modules in this file
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            source = _resolve(path, node)
            if not source.startswith("clbook"):
                continue
            for alias in node.names:
                target = f"{source}.{alias.name}"
                if (ROOT.parent / target.replace(".", "/")).with_suffix(".py").exists() or \
                        (ROOT.parent / target.replace(".", "/")).is_dir():
                    modules.add(alias.asname or alias.name)  # a module, not a name
                elif _private(alias.name):
                    found.append(f"line {node.lineno}: from {source} import {alias.name}")
        elif isinstance(node, ast.Import):
            modules.update(a.asname or a.name for a in node.names if a.name.startswith("clbook"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules \
                and _private(node.attr):
            found.append(f"line {node.lineno}: {node.value.id}.{node.attr}")
    return found


def test_no_module_imports_another_modules_private_names():
    bad = {str(p.relative_to(ROOT.parent)): v for p in sorted(ROOT.rglob("*.py")) if (v := violations(p))}
    assert not bad, f"private names used across modules: {bad}"


def test_the_check_finds_a_private_import():
    """The negative control: a module that imports a private name and one that reads it as an attribute."""
    probe = "from .ssl import _symmetric\nfrom .. import covariance\nfrom ._x import y\nx = covariance._views\n"
    assert violations(ROOT / "dynamics" / "probe.py", probe) == [
        "line 1: from clbook.dynamics.ssl import _symmetric", "line 4: covariance._views"]
