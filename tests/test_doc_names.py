"""The names that docs/ and the package READMEs give in backticks exist in the code: a
dotted ``sealtime.x.y`` resolves, a ``Class.attribute`` of a sealtime class is one of
its attributes, and a ``path/file.py`` is a file. (Renames leave docs behind: this is
where they are caught.)"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import pytest

import sealtime

ROOT = Path(sealtime.__file__).parent.parent

#: backticked names that look like code but are not Python: a Java class of the JVM
#: helper and a key of Arrow files' footer metadata
NOT_PYTHON = {"sealtime.spark.ArrowFiles", "sealtime.rows"}

#: names in files of other owners, reported to them and not yet fixed there
REPORTED = {
    ("docs/dataplane.md", "Engine.log_output"),
    ("docs/durability.md", "sealtime.engine.failpoints"),
}


def documents() -> list[Path]:
    return sorted([*(ROOT / "docs").glob("*.md"), *(ROOT / "sealtime").rglob("README.md")])


def code_names(text: str) -> list[tuple[int, str]]:
    """(line, name) of each backticked token that names code."""
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        for quoted in re.findall(r"`+([^`]+)`+", line):
            out += [(n, tok.rstrip(".")) for tok in re.findall(r"[A-Za-z_][\w./]*", quoted)]
    return out


def resolves(dotted: str) -> bool:
    """Whether ``a.b.c`` is a module, or an attribute path below the longest module."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def sealtime_classes() -> dict[str, list[type]]:
    found: dict[str, list[type]] = {}
    for info in pkgutil.walk_packages(sealtime.__path__, "sealtime."):
        for obj in vars(importlib.import_module(info.name)).values():
            if inspect.isclass(obj) and obj.__module__ == info.name:
                found.setdefault(obj.__name__, []).append(obj)
    return found


def has_attribute(cls: type, attr: str) -> bool:
    """An attribute of the class, or one its instances set (``self.attr = ...``, a
    dataclass field, an annotated slot)."""
    if hasattr(cls, attr) or attr in getattr(cls, "__dataclass_fields__", {}):
        return True
    try:
        source = inspect.getsource(cls)
    except (OSError, TypeError):
        return False
    return re.search(rf"self\.{attr}\b|^\s+{attr}\s*:", source, re.M) is not None


def missing_names() -> set[tuple[str, str]]:
    classes = sealtime_classes()
    missing = set()
    for doc in documents():
        rel = doc.relative_to(ROOT).as_posix()
        for _, tok in code_names(doc.read_text()):
            head, _, attr = tok.partition(".")
            if tok in NOT_PYTHON:
                continue
            if tok.startswith("sealtime."):
                ok = resolves(tok)
            elif re.fullmatch(r"[\w/]+\.py", tok) and "/" in tok:
                ok = any((base / tok).exists() for base in (ROOT, ROOT / "sealtime", doc.parent))
            elif re.fullmatch(r"[A-Z]\w+\.[a-z_]\w*", tok) and head in classes:
                ok = any(has_attribute(c, attr) for c in classes[head])
            else:
                continue
            if not ok:
                missing.add((rel, tok))
    return missing


def test_the_checker_finds_a_renamed_name() -> None:
    assert resolves("sealtime.columns.consolidate")
    assert not resolves("sealtime.kernels.topk")
    assert not resolves("sealtime.columns.no_such_name")
    assert has_attribute(sealtime_classes()["Antichain"][0], "as_option")


@pytest.fixture(scope="module")
def missing() -> set[tuple[str, str]]:
    return missing_names()


@pytest.mark.parametrize("rel", [d.relative_to(ROOT).as_posix() for d in documents()])
def test_names_in_docs_exist(rel, missing) -> None:
    assert sorted(tok for doc, tok in missing - REPORTED if doc == rel) == []
