"""The error hierarchy holds across the package: every exception class sealtime defines
is a `SealtimeError` (or private control flow), each is listed in `sealtime.errors`'
table, and a bare ``ValueError``/``RuntimeError`` is raised only where `errors.py`
documents it."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import pytest

import sealtime
from sealtime import errors
from sealtime.errors import SealtimeError

ROOT = Path(sealtime.__file__).parent

#: private exceptions that are control flow inside one module, never raised to a caller
CONTROL_FLOW = {
    "sealtime.cli._Stop",
    "sealtime.serve.pgwire.server._Closed",
    "sealtime.serve.pgwire.server._Fatal",
}

#: (file, function) of the bare raises `errors.py` documents, and why
DOCUMENTED_BARE_RAISES = {
    ("time/antichain.py", "as_option"),  # the floor below errors.py
    ("serve/pgwire/auth.py", "parse_verifier"),  # caught in the function itself
}


def exception_classes() -> dict[str, type[BaseException]]:
    """Every exception class defined in a sealtime module, by qualified name."""
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(sealtime.__path__, "sealtime."):
        module = importlib.import_module(info.name)
        for obj in vars(module).values():
            if (
                inspect.isclass(obj)
                and issubclass(obj, BaseException)
                and obj.__module__ == info.name
            ):
                found[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return found


@pytest.fixture(scope="module")
def classes() -> dict[str, type[BaseException]]:
    return exception_classes()


def test_every_exception_is_a_sealtime_error_or_private_control_flow(classes) -> None:
    outside = {name for name, cls in classes.items() if not issubclass(cls, SealtimeError)}
    assert outside == CONTROL_FLOW


def test_every_public_exception_is_listed_in_the_errors_table(classes) -> None:
    doc = errors.__doc__ or ""
    public = [cls for cls in classes.values() if not cls.__name__.startswith("_")]
    assert len(public) > 30  # the walk found the packages' errors, not only errors.py's
    # (named as `Name` or `package.Name`, as the table writes them)
    missing = sorted(cls.__name__ for cls in public if not re.search(rf"[`.]{cls.__name__}`", doc))
    assert missing == []


class BareRaises(ast.NodeVisitor):
    """The enclosing function of every ``raise ValueError(...)`` or
    ``raise RuntimeError(...)`` in a module."""

    def __init__(self) -> None:
        self.function = "<module>"
        self.found: set[str] = set()

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        outer, self.function = self.function, node.name
        self.generic_visit(node)
        self.function = outer

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Raise(self, node: ast.Raise) -> None:
        call = node.exc
        name = (
            call.func.id if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) else ""
        )
        if name in ("ValueError", "RuntimeError"):
            self.found.add(self.function)


def bare_raises() -> set[tuple[str, str]]:
    """(file, enclosing function) of every bare raise in sealtime's sources."""
    found = set()
    for path in ROOT.rglob("*.py"):
        visitor = BareRaises()
        visitor.visit(ast.parse(path.read_text(), str(path)))
        found |= {(path.relative_to(ROOT).as_posix(), f) for f in visitor.found}
    return found


def test_the_bare_raise_finder_finds_one() -> None:
    visitor = BareRaises()
    visitor.visit(ast.parse("def f():\n    def g():\n        raise ValueError('x')\n"))
    assert visitor.found == {"g"}


def test_bare_value_and_runtime_errors_only_where_documented() -> None:
    assert bare_raises() <= DOCUMENTED_BARE_RAISES
    for file, function in DOCUMENTED_BARE_RAISES:
        assert function in (errors.__doc__ or ""), (file, function)
