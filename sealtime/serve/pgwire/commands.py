"""The statements the wire layer answers itself, before anything reaches the backend:
transactions, client settings, cursors and ``COPY (...) TO STDOUT``.

>>> classify("BEGIN"), classify("commit"), classify("SET extra_float_digits = 3")
(Begin(), Commit(rollback=False), SetParam(name='extra_float_digits', value='3'))
>>> classify("DECLARE c CURSOR FOR SUBSCRIBE v WITH (PROGRESS)")
Declare(name='c', query='SUBSCRIBE v WITH (PROGRESS)', hold=False)
>>> classify("FETCH 10 c WITH (timeout = '1s')"), classify('FETCH FORWARD ALL FROM "c"')
(Fetch(name='c', count=10, timeout='1s'), Fetch(name='c', count=None, timeout=None))
>>> classify("COPY (SUBSCRIBE v) TO STDOUT"), classify("SELECT 1") is None
(Copy(query='SUBSCRIBE v'), True)
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "Begin",
    "CloseCursor",
    "Commit",
    "Copy",
    "Declare",
    "Fetch",
    "ResetParam",
    "SetParam",
    "ShowParam",
    "classify",
]


@dataclass(frozen=True)
class Begin:
    """``BEGIN`` / ``START TRANSACTION``."""


@dataclass(frozen=True)
class Commit:
    """``COMMIT`` / ``END`` (or ``ROLLBACK`` / ``ABORT``)."""

    rollback: bool = False


@dataclass(frozen=True)
class SetParam:
    """``SET [SESSION|LOCAL] name {=|TO} value`` / ``SET TIME ZONE value``."""

    name: str
    value: str


# The commands are parallel frozen dataclasses on purpose: one per statement form.
@dataclass(frozen=True)
class ResetParam:
    """``RESET name`` / ``RESET ALL`` (name None)."""

    name: str | None


@dataclass(frozen=True)
class ShowParam:
    """``SHOW name`` of a client setting, or ``SHOW ALL`` (name None)."""

    name: str | None


@dataclass(frozen=True)
class Declare:
    """``DECLARE name CURSOR [WITH|WITHOUT HOLD] FOR query``."""

    name: str
    query: str
    hold: bool


@dataclass(frozen=True)
class Fetch:
    """``FETCH [FORWARD|NEXT] [n|ALL] [FROM|IN] name [WITH (timeout = 't')]``; count
    None is ALL."""

    name: str
    count: int | None
    timeout: str | None


@dataclass(frozen=True)
class CloseCursor:
    """``CLOSE name`` / ``CLOSE ALL`` (name None)."""

    name: str | None


@dataclass(frozen=True)
class Copy:
    """``COPY (query) TO STDOUT``."""

    query: str


Command = Begin | Commit | SetParam | ResetParam | ShowParam | Declare | Fetch | CloseCursor | Copy

_NAME = r'(?:"((?:[^"]|"")+)"|([A-Za-z_][\w$]*))'
_I = re.IGNORECASE | re.DOTALL
_BEGIN = re.compile(
    r"^(?:BEGIN|START\s+TRANSACTION)(?:\s+(?:WORK|TRANSACTION|ISOLATION\s+LEVEL.*|READ\s+.*))?$", _I
)
_COMMIT = re.compile(r"^(COMMIT|END|ROLLBACK|ABORT)(?:\s+(?:WORK|TRANSACTION))?$", _I)
_SET = re.compile(
    r"^SET\s+(?:SESSION\s+|LOCAL\s+)?(?:(TIME\s+ZONE)\s+|([\w.]+)\s*(?:=|\s+TO\s+)\s*)(.+)$", _I
)
_RESET = re.compile(r"^RESET\s+([\w.]+)$", _I)
_SHOW = re.compile(r"^SHOW\s+([\w.]+)$", _I)
_DECLARE = re.compile(
    rf"^DECLARE\s+{_NAME}\s+(?:BINARY\s+)?(?:(?:ASENSITIVE|INSENSITIVE)\s+)?(?:(?:NO\s+)?SCROLL\s+)?"
    r"CURSOR\s+(?:(WITH|WITHOUT)\s+HOLD\s+)?FOR\s+(.+)$",
    _I,
)
_FETCH = re.compile(
    r"^FETCH\s+(?:(?:FORWARD|NEXT)\s+)?(?:(ALL|\d+)\s+)?(?:(?:FROM|IN)\s+)?"
    rf"{_NAME}(?:\s+WITH\s*\(\s*TIMEOUT\s*(?:=\s*)?('(?:[^']|'')*'|\d+)\s*\))?$",
    _I,
)
_CLOSE = re.compile(rf"^CLOSE\s+(?:(ALL)|{_NAME})$", _I)
_COPY = re.compile(
    r"^COPY\s*\((.+)\)\s*TO\s+STDOUT(?:\s+(?:WITH\s*)?\(\s*FORMAT\s+TEXT\s*\))?$", _I
)

#: client settings SHOW answers itself (the others go to the backend: SHOW VIEWS)
CLIENT_SETTINGS = {
    "application_name",
    "client_encoding",
    "datestyle",
    "extra_float_digits",
    "integer_datetimes",
    "intervalstyle",
    "is_superuser",
    "search_path",
    "server_encoding",
    "server_version",
    "server_version_num",
    "session_authorization",
    "standard_conforming_strings",
    "statement_timeout",
    "timezone",
    "transaction_isolation",
    "default_transaction_isolation",
    "lock_timeout",
    "all",
}


def _name(quoted: str | None, bare: str | None) -> str:
    return quoted.replace('""', '"') if quoted is not None else (bare or "").lower()


def classify(sql: str) -> Command | None:
    """The wire-level command `sql` is (its text without the ``;``), or None: a
    statement for the backend."""
    text = sql.strip().rstrip(";").strip()
    if m := _BEGIN.match(text):
        return Begin()
    if m := _COMMIT.match(text):
        return Commit(rollback=m.group(1).upper() in ("ROLLBACK", "ABORT"))
    if m := _SET.match(text):
        name = "timezone" if m.group(1) else m.group(2).lower()
        value = m.group(3).strip()
        if len(value) >= 2 and value[0] == value[-1] == "'":
            value = value[1:-1].replace("''", "'")
        return SetParam(name, value)
    if m := _RESET.match(text):
        name = m.group(1).lower()
        return ResetParam(None if name == "all" else name)
    if (m := _SHOW.match(text)) and m.group(1).lower() in CLIENT_SETTINGS:
        name = m.group(1).lower()
        return ShowParam(None if name == "all" else name)
    if m := _DECLARE.match(text):
        return Declare(
            _name(m.group(1), m.group(2)), m.group(4).strip(), (m.group(3) or "").upper() == "WITH"
        )
    if m := _FETCH.match(text):
        count = m.group(1)
        timeout = m.group(4)
        if timeout is not None and timeout.startswith("'"):
            timeout = timeout[1:-1].replace("''", "'")
        return Fetch(
            _name(m.group(2), m.group(3)),
            None if (count or "").upper() == "ALL" else int(count or 1),
            timeout,
        )
    if m := _CLOSE.match(text):
        return CloseCursor(None if m.group(1) else _name(m.group(2), m.group(3)))
    if m := _COPY.match(text):
        return Copy(m.group(1).strip())
    return None
