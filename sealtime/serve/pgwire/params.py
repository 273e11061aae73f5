"""Statement parameters (``$1``, ``$2``...) of the extended protocol.

The backend runs SQL text (Spark SQL), so a bound parameter becomes a literal in the
text: its value is read as the parameter's type (a bad value is 22P02
invalid_text_representation, never spliced in raw) and written as a Spark SQL literal by
sqlglot, which escapes quotes and backslashes the way Spark reads them. Placeholders are
found with the same tokenizer that splits statements, so a ``$1`` inside a string or a
comment is left alone.

A parameter's type is the client's (Parse's OIDs), else the type of what it is cast to
(``$1::bigint``), else that of the expression it is compared with or computed with
(``WHERE id = $1``: the type of ``id``, asked from the backend's describe), else text,
as PostgreSQL does.

>>> placeholders("SELECT * FROM t WHERE a = $1 AND b = '$2' -- $3")
[(26, 28, 1)]
>>> substitute("SELECT * FROM t WHERE a = $1 AND s = $2", [PgType.INT8, PgType.TEXT], ["5", "it's"])
"SELECT * FROM t WHERE a = 5 AND s = 'it\\\\'s'"
>>> substitute("SELECT $1", [PgType.INT8], ["5; DROP VIEW v"])
Traceback (most recent call last):
...
sealtime.serve.pgwire.params.ParameterError: parameter $1: '5; DROP VIEW v' is not a valid int8
"""

from __future__ import annotations

import datetime as _dt
import re
import struct
from collections.abc import Callable, Sequence
from decimal import Decimal, InvalidOperation

from sqlglot import exp
from sqlglot.tokens import TokenType

from ...errors import SealtimeError
from ...sql.parse import DIALECT, sql_tokens
from ..backend import Column, PgType

__all__ = [
    "ParameterError",
    "decode_binary",
    "infer_types",
    "placeholders",
    "substitute",
    "type_of_oid",
]


class ParameterError(SealtimeError, ValueError):
    """A bound parameter's value does not read as its type (22P02)."""


def placeholders(sql: str) -> list[tuple[int, int, int]]:
    """``(start, end, n)`` of every ``$n`` in `sql` (end exclusive), in text order."""
    try:
        tokens = sql_tokens(sql)
    except SealtimeError:
        return []  # an unterminated string: the backend reports it
    out = []
    for prev, tok in zip(tokens, tokens[1:]):
        if (
            prev.token_type == TokenType.PARAMETER
            and prev.text == "$"
            and tok.token_type == TokenType.NUMBER
            and tok.text.isdigit()
            and tok.start == prev.end + 1
        ):
            out.append((prev.start, tok.end + 1, int(tok.text)))
    return out


def type_of_oid(oid: int) -> PgType | None:
    """The `PgType` of a client-declared OID (0 or one we do not know: None)."""
    try:
        t = PgType(oid)
    except ValueError:
        return None
    return None if t is PgType.UNKNOWN else t


_AS_OF = re.compile(r"\s+AS\s+OF\s+\S+\s*;?\s*$", re.IGNORECASE)
_SPARK_TYPES = {
    "BOOLEAN": PgType.BOOL,
    "TINYINT": PgType.INT2,
    "SMALLINT": PgType.INT2,
    "INT": PgType.INT4,
    "BIGINT": PgType.INT8,
    "FLOAT": PgType.FLOAT4,
    "DOUBLE": PgType.FLOAT8,
    "DECIMAL": PgType.NUMERIC,
    "TEXT": PgType.TEXT,
    "VARCHAR": PgType.TEXT,
    "CHAR": PgType.TEXT,
    "DATE": PgType.DATE,
    "TIMESTAMP": PgType.TIMESTAMP,
    "TIMESTAMPTZ": PgType.TIMESTAMPTZ,
    "TIMESTAMPLTZ": PgType.TIMESTAMPTZ,
    "BINARY": PgType.BYTEA,
    "VARBINARY": PgType.BYTEA,
}


def _param_number(node: exp.Expression) -> int | None:
    if isinstance(node, exp.Parameter) and isinstance(node.this, exp.Literal):
        text = node.this.this
        return int(text) if str(text).isdigit() else None
    return None


def infer_types(
    sql: str, count: int, describe: Callable[[str], list[Column] | None]
) -> list[PgType | None]:
    """Types of ``$1..$count`` from `sql` itself: casts, then the other side of a
    comparison or arithmetic whose type `describe` gives (a probe ``SELECT <expr> FROM
    <the query's FROM>``). None where nothing says (the caller uses text)."""
    out: list[PgType | None] = [None] * count
    try:
        trees = DIALECT.parse(_AS_OF.sub("", sql))
    except Exception:  # not a query sqlglot reads (SUBSCRIBE, FETCH): no inference
        return out
    if len(trees) != 1 or trees[0] is None:
        return out
    tree = trees[0]
    probes: dict[int, exp.Expression] = {}
    for node in tree.find_all(exp.Parameter):
        n = _param_number(node)
        if n is None or not 1 <= n <= count:
            continue
        parent = node.parent
        if isinstance(parent, (exp.Cast, exp.TryCast)):
            name = parent.to.this.name if parent.to is not None else ""
            out[n - 1] = _SPARK_TYPES.get(name.upper())
        elif isinstance(parent, (exp.Binary, exp.Between, exp.In)) and n not in probes:
            others = [c for c in parent.iter_expressions() if c is not node]
            cols = [o for o in others if isinstance(o, exp.Column)]
            if cols:
                probes[n] = cols[0]
    select = tree if isinstance(tree, exp.Select) else tree.find(exp.Select)
    if probes and select is not None and select.args.get("from_") is not None:
        probe = exp.select(*[e.copy().as_(f"p{n}") for n, e in probes.items()])
        probe.set("from_", select.args["from_"].copy())
        for join in select.args.get("joins") or []:
            probe.append("joins", join.copy())
        try:
            cols = describe(probe.sql(dialect="spark")) or []
        except Exception:  # the probe is a guess: without it, text
            cols = []
        for (n, _), col in zip(probes.items(), cols):
            if out[n - 1] is None:
                out[n - 1] = col.type
    return out


def _literal(value: str, t: PgType, n: int) -> str:
    def bad() -> ParameterError:
        return ParameterError(f"parameter ${n}: {value!r} is not a valid {t.name.lower()}")

    if t in (PgType.INT2, PgType.INT4, PgType.INT8):
        text = value.strip()
        if not text.lstrip("+-").isdigit():
            raise bad()
        return str(int(text))
    if t in (PgType.FLOAT4, PgType.FLOAT8, PgType.NUMERIC):
        try:
            d = Decimal(value.strip())
        except InvalidOperation:
            raise bad() from None
        if not d.is_finite():
            kind = "DOUBLE" if t is not PgType.NUMERIC else None
            if kind is None:
                raise bad()
            return f"CAST({exp.Literal.string(str(float(d))).sql(dialect='spark')} AS DOUBLE)"
        return exp.Literal.number(str(d)).sql(dialect="spark")
    if t is PgType.BOOL:
        v = value.strip().lower()
        if v in ("t", "true", "yes", "on", "1", "y"):
            return "TRUE"
        if v in ("f", "false", "no", "off", "0", "n"):
            return "FALSE"
        raise bad()
    if t is PgType.DATE:
        try:
            _dt.date.fromisoformat(value.strip())
        except ValueError:
            raise bad() from None
        return f"DATE {exp.Literal.string(value.strip()).sql(dialect='spark')}"
    if t in (PgType.TIMESTAMP, PgType.TIMESTAMPTZ):
        try:
            ts = _dt.datetime.fromisoformat(_iso(value.strip()))
        except ValueError:
            raise bad() from None
        if ts.tzinfo is not None:
            ts = ts.astimezone(_dt.timezone.utc).replace(tzinfo=None)
        return f"TIMESTAMP {exp.Literal.string(ts.isoformat(sep=' ')).sql(dialect='spark')}"
    if t is PgType.BYTEA:
        if not value.startswith("\\x"):
            raise bad()
        try:
            bytes.fromhex(value[2:])
        except ValueError:
            raise bad() from None
        return f"X'{value[2:]}'"
    return exp.Literal.string(value).sql(dialect="spark")


def _iso(text: str) -> str:
    """PostgreSQL's ``+00``/``+0530`` offsets as Python reads them (``+00:00``)."""
    for i in range(len(text) - 1, 9, -1):
        if text[i] in "+-":
            off = text[i + 1 :]
            if off.isdigit() and len(off) in (2, 4):
                return text[:i] + text[i] + off[:2] + ":" + (off[2:] or "00")
            break
    return text


def substitute(sql: str, types: Sequence[PgType | None], values: Sequence[str | None]) -> str:
    """`sql` with each ``$n`` replaced by the literal of ``values[n-1]`` read as
    ``types[n-1]`` (None type: text; None value: NULL)."""
    out = []
    last = 0
    for start, end, n in placeholders(sql):
        if not 1 <= n <= len(values):
            raise ParameterError(
                f"there is no parameter ${n}: {len(values)} parameter(s) were bound"
            )
        value = values[n - 1]
        t = types[n - 1] if n - 1 < len(types) else None
        out.append(sql[last:start])
        out.append("NULL" if value is None else _literal(value, t or PgType.TEXT, n))
        last = end
    out.append(sql[last:])
    return "".join(out)


def decode_binary(data: bytes, t: PgType | None, n: int) -> str:
    """A parameter sent in binary format, as text (what `substitute` reads)."""
    try:
        if t in (PgType.INT2, PgType.INT4, PgType.INT8):
            return str(int.from_bytes(data, "big", signed=True))
        if t is PgType.FLOAT4:
            return repr(struct.unpack(">f", data)[0])
        if t is PgType.FLOAT8:
            return repr(struct.unpack(">d", data)[0])
        if t is PgType.BOOL:
            return "t" if data != b"\x00" else "f"
        if t is PgType.DATE:
            days = struct.unpack(">i", data)[0]
            return (_dt.date(2000, 1, 1) + _dt.timedelta(days=days)).isoformat()
        if t in (PgType.TIMESTAMP, PgType.TIMESTAMPTZ):
            us = struct.unpack(">q", data)[0]
            ts = _dt.datetime(2000, 1, 1) + _dt.timedelta(microseconds=us)
            return ts.isoformat(sep=" ") + ("+00" if t is PgType.TIMESTAMPTZ else "")
        if t is PgType.NUMERIC:
            ndigits, weight, sign, dscale = struct.unpack(">hhHh", data[:8])
            digits = struct.unpack(f">{ndigits}H", data[8 : 8 + 2 * ndigits])
            value = sum(
                (Decimal(d) * Decimal(10000) ** (weight - i) for i, d in enumerate(digits)),
                Decimal(0),
            )
            if sign == 0xC000:
                return "NaN"
            return str((-value if sign == 0x4000 else value).quantize(Decimal(1).scaleb(-dscale)))
        if t is PgType.BYTEA:
            return "\\x" + data.hex()
        return data.decode("utf-8")
    except (struct.error, UnicodeDecodeError, ValueError, OverflowError) as e:
        raise ParameterError(f"parameter ${n}: its binary value does not read as {t}") from e
