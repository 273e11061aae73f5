"""Statements of a SQL pipeline file and of the ``sealtime sql`` shell.

A text is split into statements at the ``;`` tokens of sqlglot's tokenizer (Spark
dialect), so semicolons inside strings, quoted names and comments do not split. Queries
(``CREATE VIEW ... AS <query>``, ``SELECT``, ``EXPLAIN <query>``) are parsed by sqlglot;
the statements Spark SQL has no grammar for (``CREATE SOURCE``, ``CREATE SINK``,
``PUBLISH``, ``SUBSCRIBE``) are read from sqlglot's tokens with the small option grammar
below. Every position is a (line, column) of the whole text, so an error names where the
statement is in the file.

::

    CREATE SOURCE name FROM FILES 'dir' [WITH] (FORMAT csv|json|parquet, SCHEMA 'a long, b string',
        [EVENT TIME col, LATENESS '4s', IDLE TIMEOUT '5s', MAX ROWS PER TICK n,
         PATTERN '*.csv', FINITE, SETTLE '1s', HEADER false, DELIMITER ';'])
    CREATE SOURCE name FROM NATS 'nats://host:4222' (SUBJECT 'a.*', STREAM 'S', SCHEMA '...',
        [DURABLE 'd', FORMAT json, EVENT TIME col, ...])
    CREATE SOURCE name FROM REDIS 'redis://host:6379' (KEY 'k', SCHEMA '...',
        [GROUP 'g', CONSUMER 'c', FORMAT json|fields, FIELD 'data', ID COLUMN 'id', ...])
    CREATE SOURCE name FROM NEXMARK [(RATE n, SEED n, LIMIT n, MAX ROWS PER TICK n, ...)]
    CREATE [MATERIALIZED] VIEW name AS <query>
    CREATE SINK name FROM view INTO PARQUET 'path' | INTO PERSIST ['shard']
    PUBLISH view [AS VIEW | AS STREAM] [WITH (TOPIC 'name', PARTITIONS n, HOST 'h', PORT n)]
    SUBSCRIBE [TO] view [WITH (PROGRESS [= true|false], SNAPSHOT [= true|false])] [AS OF t]
    SELECT ... [AS OF t]
    EXPLAIN <query> | EXPLAIN VIEW name
    DROP SOURCE|VIEW|SINK [IF EXISTS] name [CASCADE]        (the live service)
    SHOW SOURCES|VIEWS|SINKS

An option is ``KEY [=] value`` where the value is a string, a number, ``true``/``false``
or a name; a key alone means ``true``.

>>> stmts = split("CREATE VIEW v AS SELECT ';' AS s FROM t; -- a comment; still one\\nPUBLISH v AS VIEW;")
>>> [(s.kind, s.line, s.col) for s in stmts]
[('CREATE VIEW', 1, 1), ('PUBLISH', 2, 1)]
>>> p = parse_statement(stmts[1]); p.view, p.mode, p.topic
('v', 'view', 'v')
>>> parse_statement(split("CREATE SOURCE s FROM KAFKA 'x' (FORMAT json)")[0])
Traceback (most recent call last):
...
sealtime.sql.errors.SqlError: CREATE SOURCE s at line 1, column 22: unknown connector KAFKA; use FILES, NATS, REDIS or NEXMARK
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp
from sqlglot.errors import ParseError
from sqlglot.tokens import Token, TokenType

from .errors import SqlError
from .parse import DIALECT, Parsed, raise_parse_error, sql_tokens

__all__ = [
    "CONNECTOR_OPTIONS",
    "CreateSink",
    "CreateSource",
    "CreateView",
    "Drop",
    "Explain",
    "Publish",
    "Select",
    "Show",
    "Statement",
    "Subscribe",
    "parse_statement",
    "parse_text",
    "split",
]

#: Options every source takes (they go to ``flow.source``).
COMMON_OPTIONS = (
    "FORMAT",
    "SCHEMA",
    "EVENT TIME",
    "LATENESS",
    "IDLE TIMEOUT",
    "MAX ROWS PER TICK",
    "MAX FUTURE",
    "RETAIN HISTORY FOR",
    "RETAIN HISTORY",
)
#: Per connector: the options it takes besides `COMMON_OPTIONS`.
CONNECTOR_OPTIONS: dict[str, tuple[str, ...]] = {
    "FILES": ("PATTERN", "FINITE", "SETTLE", "HEADER", "DELIMITER"),
    "NEXMARK": ("RATE", "SEED", "LIMIT"),
    "NATS": ("SUBJECT", "STREAM", "DURABLE"),
    "REDIS": ("KEY", "GROUP", "CONSUMER", "FIELD", "ID COLUMN"),
}
_PUBLISH_OPTIONS = ("TOPIC", "PARTITIONS", "HOST", "PORT")
_SUBSCRIBE_OPTIONS = ("PROGRESS", "SNAPSHOT")


@dataclass
class Statement:
    """One statement of a text: its tokens (without the ``;``), its kind (the leading
    keywords, e.g. ``"CREATE SOURCE"``), and where it starts."""

    text: str
    tokens: list[Token]
    kind: str
    start: int
    end: int

    @property
    def line(self) -> int:
        return self.tokens[0].line

    @property
    def col(self) -> int:
        return _position(self.text, self.tokens[0].start)[1]

    @property
    def source_text(self) -> str:
        """The statement's own text (without the ``;``)."""
        return self.text[self.start : self.end + 1]

    def error(
        self, reason: str, token: Token | None = None, construct: str | None = None
    ) -> SqlError:
        """A `SqlError` naming this statement, at `token` (default: its first)."""
        line, col = _position(self.text, (token or self.tokens[0]).start)
        return SqlError(construct or self.title, reason, line=line, col=col)

    @property
    def title(self) -> str:
        """``"CREATE SOURCE sellers"``: the kind and the name it defines, for messages."""
        words = self.kind.split()
        toks = [t for t in self.tokens if t.text.upper() != "MATERIALIZED"]
        name = toks[len(words)].text if len(toks) > len(words) else ""
        return (
            f"{self.kind} {name}".strip() if self.kind not in ("SELECT", "EXPLAIN") else self.kind
        )


@dataclass
class CreateSource:
    """``CREATE SOURCE name FROM connector 'address' (options)``."""

    statement: Statement
    name: str
    connector: str
    address: str
    options: dict[str, Any]
    option_tokens: dict[str, Token] = field(default_factory=dict)


@dataclass
class CreateView:
    """``CREATE VIEW name AS query``: `query` is parsed, positioned in the whole text."""

    statement: Statement
    name: str
    query: Parsed


@dataclass
class CreateSink:
    """``CREATE SINK name FROM view INTO PARQUET 'path' | PERSIST ['shard']``."""

    statement: Statement
    name: str
    view: str
    kind: str
    target: str


@dataclass
class Publish:
    """``PUBLISH view [AS VIEW|STREAM] [WITH (...)]``: ``col.publish(topic, mode=...)``."""

    statement: Statement
    view: str
    mode: str
    topic: str
    options: dict[str, Any]


@dataclass
class Subscribe:
    """``SUBSCRIBE view [WITH (PROGRESS, SNAPSHOT false)] [AS OF t]``."""

    statement: Statement
    view: str
    progress: bool
    snapshot: bool
    as_of: int | None = None


@dataclass
class Select:
    """A query, optionally ``AS OF t`` (a logical time, or a timestamp string)."""

    statement: Statement
    query: Parsed
    as_of: int | None


@dataclass
class Explain:
    """``EXPLAIN query``, or ``EXPLAIN VIEW name`` (`query` None, `view` its name)."""

    statement: Statement
    query: Parsed | None
    view: str | None = None


@dataclass
class Drop:
    """``DROP SOURCE|VIEW|SINK [IF EXISTS] name [CASCADE]``: `what` is ``SOURCE``,
    ``VIEW`` or ``SINK``."""

    statement: Statement
    what: str
    name: str
    if_exists: bool
    cascade: bool


@dataclass
class Show:
    """``SHOW SOURCES|VIEWS|SINKS``: `what` is the plural word."""

    statement: Statement
    what: str


Parsed_ = (
    CreateSource | CreateView | CreateSink | Publish | Subscribe | Select | Explain | Drop | Show
)


def _position(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def _kind(tokens: list[Token]) -> str:
    words = [t.text.upper() for t in tokens[:3]]
    if words[:1] == ["CREATE"]:
        rest = [w for w in words[1:] if w != "MATERIALIZED"]
        if rest[:1] == ["OR"]:
            return "CREATE OR REPLACE"
        return f"CREATE {rest[0]}" if rest else "CREATE"
    if words[0] in ("WITH", "(") or tokens[0].token_type == TokenType.SELECT:
        return "SELECT"
    return words[0]


def split(text: str) -> list[Statement]:
    """The statements of `text`, split at ``;`` outside strings, names and comments.
    An unterminated string or comment is a `SqlError` with its position."""
    tokens = sql_tokens(text)
    out: list[Statement] = []
    current: list[Token] = []
    for tok in tokens + [None]:  # type: ignore[list-item]
        if tok is None or tok.token_type == TokenType.SEMICOLON:
            if current:
                end = max(t.end for t in current)
                out.append(Statement(text, current, _kind(current), current[0].start, end))
            current = []
        else:
            current.append(tok)
    return out


def is_complete(text: str) -> bool:
    """Does `text` end with a whole statement (its ``;`` typed, strings and comments
    closed)? For the shell: keep reading lines until it does."""
    try:
        tokens = DIALECT.tokenize(text)
    except Exception:  # an open string or comment: more input needed
        return False
    return bool(tokens) and tokens[-1].token_type == TokenType.SEMICOLON


# ---------------------------------------------------------------------- queries


def _padded(text: str, start: int) -> str:
    """`text` with everything before `start` blanked (newlines kept), so that a parse of
    the rest reports positions in the whole text."""
    head = "".join(c if c == "\n" else " " for c in text[:start])
    return head + text[start:]


def _parse_query(stmt: Statement, start: int, end: int) -> Parsed:
    """Parse ``text[start:end]`` as one query with positions in the whole text."""
    text = _padded(stmt.text[:end], start)
    tokens = sql_tokens(text)
    if not tokens:
        raise stmt.error("expected a query (SELECT ...) here")
    try:
        trees = [t for t in DIALECT.parser().parse(tokens, text) if t is not None]
    except ParseError as e:
        raise_parse_error(text, e)
    if len(trees) != 1 or not isinstance(trees[0], exp.Query):
        raise stmt.error("expected one query (SELECT ...)", tokens[0])
    return Parsed(trees[0], text, tokens)


# ---------------------------------------------------------------------- option grammar


class _Cursor:
    """Reads a statement's tokens left to right; errors point at the current token."""

    def __init__(self, stmt: Statement) -> None:
        self.stmt = stmt
        self.toks = stmt.tokens
        self.i = 0

    def peek(self, k: int = 0) -> Token | None:
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else None

    def word(self, k: int = 0) -> str:
        tok = self.peek(k)
        return "" if tok is None or tok.token_type == TokenType.STRING else tok.text.upper()

    def fail(self, reason: str, tok: Token | None = None) -> SqlError:
        tok = tok or self.peek() or self.toks[-1]
        return self.stmt.error(reason, tok)

    def expect(self, *words: str, fix: str) -> None:
        for w in words:
            if self.word() != w:
                got = self.peek()
                raise self.fail(f"expected {w}, got {got.text if got else 'the end'}; {fix}")
            self.i += 1

    def accept(self, *words: str) -> bool:
        if [self.word(k) for k in range(len(words))] == list(words):
            self.i += len(words)
            return True
        return False

    def name(self, what: str, fix: str) -> str:
        tok = self.peek()
        if (
            tok is None
            or tok.token_type in (TokenType.STRING, TokenType.NUMBER)
            or not (tok.text.replace("_", "a").isalnum())
        ):
            raise self.fail(f"expected {what}; {fix}")
        self.i += 1
        return tok.text

    def qualified(self, what: str, fix: str) -> str:
        """A table name, or ``source.subsource`` / ``source.errors`` / ``view.errors``."""
        name = self.name(what, fix)
        tok = self.peek()
        if tok is not None and tok.token_type == TokenType.DOT:
            self.i += 1
            name += "." + self.name(what, fix)
        return name

    def string(self, what: str, fix: str) -> str:
        tok = self.peek()
        if tok is None or tok.token_type != TokenType.STRING:
            raise self.fail(f"expected {what} as a quoted string; {fix}")
        self.i += 1
        return tok.text

    def end(self, fix: str) -> None:
        tok = self.peek()
        if tok is not None:
            raise self.fail(f"unexpected {tok.text!r}; {fix}")

    def options(self, allowed: tuple[str, ...]) -> tuple[dict[str, Any], dict[str, Token]]:
        """``[WITH] ( KEY [=] value, ... )`` -> {KEY: value}; nothing -> {}."""
        out: dict[str, Any] = {}
        where: dict[str, Token] = {}
        if self.peek() is None:
            return out, where
        self.accept("WITH")
        if self.word() != "(":
            raise self.fail(f"expected options in parentheses, e.g. ({allowed[0]} ...)")
        self.i += 1
        keys = sorted(allowed, key=lambda k: -len(k.split()))
        while True:
            first = self.peek()
            if first is None:
                raise self.fail("missing ')' after the options")
            if first.token_type == TokenType.R_PAREN:
                self.i += 1
                break
            key = next((k for k in keys if self.accept(*k.split())), None)
            if key is None:
                raise self.fail(
                    f"unknown option {first.text!r}; options here: {', '.join(allowed)}", first
                )
            if key in out:
                raise self.fail(f"option {key} is given twice", first)
            self.accept("=")
            tok = self.peek()
            if tok is None or tok.token_type in (TokenType.COMMA, TokenType.R_PAREN):
                value: Any = True
            else:
                value = _literal(tok)
                self.i += 1
            out[key] = value
            where[key] = first
            if self.peek() is not None and self.peek().token_type == TokenType.COMMA:  # type: ignore[union-attr]
                self.i += 1
            elif self.peek() is None or self.peek().token_type != TokenType.R_PAREN:  # type: ignore[union-attr]
                raise self.fail(f"expected ',' or ')' after option {key}")
        return out, where


def _literal(tok: Token) -> Any:
    if tok.token_type == TokenType.STRING:
        return tok.text
    if tok.token_type == TokenType.NUMBER:
        return float(tok.text) if any(c in tok.text for c in ".eE") else int(tok.text)
    if tok.text.upper() in ("TRUE", "FALSE"):
        return tok.text.upper() == "TRUE"
    return tok.text  # a name (FORMAT csv, EVENT TIME ts)


# ---------------------------------------------------------------------- statements


def _create_source(stmt: Statement) -> CreateSource:
    c = _Cursor(stmt)
    c.expect("CREATE", "SOURCE", fix="write CREATE SOURCE name FROM FILES 'dir' (...)")
    name = c.name("the source's name", "write CREATE SOURCE name FROM ...")
    c.expect("FROM", fix="write CREATE SOURCE name FROM FILES|NATS|REDIS 'address' (...)")
    conn_tok = c.peek()
    connector = c.word()
    if connector not in CONNECTOR_OPTIONS:
        raise c.fail(
            f"unknown connector {conn_tok.text if conn_tok else 'missing'}; use FILES, NATS, "
            "REDIS or NEXMARK"
        )
    c.i += 1
    if connector == "NEXMARK":  # (a generator: no address)
        options, where = c.options(COMMON_OPTIONS + CONNECTOR_OPTIONS[connector])
        c.end("the options end the statement")
        return CreateSource(stmt, name, connector, "", options, where)
    what = {"FILES": "the directory", "NATS": "the server URL", "REDIS": "the server URL"}
    address = c.string(
        what[connector], f"e.g. FROM {connector} '{'data/dir' if connector == 'FILES' else '...'}'"
    )
    options, where = c.options(COMMON_OPTIONS + CONNECTOR_OPTIONS[connector])
    c.end("the options end the statement")
    return CreateSource(stmt, name, connector, address, options, where)


def _create_view(stmt: Statement) -> CreateView:
    c = _Cursor(stmt)
    c.expect("CREATE", fix="")
    c.accept("MATERIALIZED")  # every view is incrementally maintained: Materialize's word is fine
    c.expect("VIEW", fix="write CREATE VIEW name AS SELECT ...")
    if c.word() in ("IF", "OR"):
        raise c.fail("IF NOT EXISTS / OR REPLACE: a view is defined once; leave it out")
    name = c.name("the view's name", "write CREATE VIEW name AS SELECT ...")
    if c.word() == "(":
        raise c.fail("a column list after the view name; name the columns with AS in the SELECT")
    as_tok = c.peek()
    c.expect("AS", fix="write CREATE VIEW name AS SELECT ...")
    assert as_tok is not None
    query = _parse_query(stmt, as_tok.end + 1, stmt.end + 1)
    return CreateView(stmt, name, query)


def _create_sink(stmt: Statement) -> CreateSink:
    fix = "write CREATE SINK name FROM view INTO PARQUET 'path' (or INTO PERSIST 'shard')"
    c = _Cursor(stmt)
    c.expect("CREATE", "SINK", fix=fix)
    name = c.name("the sink's name", fix)
    c.expect("FROM", fix=fix)
    view = c.qualified("the view (or source) to write", fix)
    c.expect("INTO", fix=fix)
    kind = c.word()
    if kind not in ("PARQUET", "PERSIST"):
        raise c.fail(f"unknown sink {c.peek().text if c.peek() else 'missing'}; {fix}")  # type: ignore[union-attr]
    c.i += 1
    if kind == "PERSIST" and c.peek() is None:
        target = name
    else:
        target = c.string("the path" if kind == "PARQUET" else "the shard name", fix)
    c.end(fix)
    return CreateSink(stmt, name, view, kind, target)


def _publish(stmt: Statement) -> Publish:
    fix = "write PUBLISH view [AS VIEW|STREAM] [WITH (TOPIC 'name', PARTITIONS n)]"
    c = _Cursor(stmt)
    c.expect("PUBLISH", fix=fix)
    view = c.qualified("the view (or source) to publish", fix)
    mode = "stream"
    if c.accept("AS"):
        if c.accept("VIEW"):
            mode = "view"
        elif c.accept("STREAM"):
            mode = "stream"
        else:
            raise c.fail(f"AS VIEW (snapshot + resumable updates) or AS STREAM; {fix}")
    options, _ = c.options(_PUBLISH_OPTIONS)
    c.end(fix)
    topic = options.pop("TOPIC", view)
    return Publish(stmt, view, mode, str(topic), options)


def _subscribe(stmt: Statement) -> Subscribe:
    fix = "write SUBSCRIBE view [WITH (PROGRESS)] [AS OF t]"
    toks = stmt.tokens
    as_of = None
    if len(toks) >= 3 and toks[-3].text.upper() == "AS" and toks[-2].text.upper() == "OF":
        as_of = _as_of_value(stmt, toks[-1])
        stmt = Statement(stmt.text, toks[:-3], stmt.kind, stmt.start, toks[-4].end)
    c = _Cursor(stmt)
    c.expect("SUBSCRIBE", fix=fix)
    c.accept("TO")
    if c.word() == "(":
        raise c.fail(
            "SUBSCRIBE to a query: create a view first (CREATE VIEW v AS ...), then SUBSCRIBE v"
        )
    view = c.qualified("the view to subscribe to", fix)
    options, _ = c.options(_SUBSCRIBE_OPTIONS)
    c.end(fix)
    return Subscribe(
        stmt,
        view,
        bool(options.get("PROGRESS", False)),
        bool(options.get("SNAPSHOT", True)),
        as_of,
    )


def _as_of_value(stmt: Statement, tok: Token) -> int:
    if tok.token_type == TokenType.NUMBER and tok.text.isdigit():
        return int(tok.text)
    if tok.token_type == TokenType.STRING:
        try:
            ts = _dt.datetime.fromisoformat(tok.text)
        except ValueError:
            pass
        else:
            if ts.tzinfo is None:
                ts = ts.replace(tzinfo=_dt.timezone.utc)
            return int(ts.timestamp() * 1000)
    raise stmt.error(
        f"AS OF {tok.text}: write a logical time (ms, e.g. AS OF 4000) or a timestamp "
        "string (AS OF '2024-01-01 12:00:00', UTC)",
        tok,
        construct="AS OF",
    )


def _select(stmt: Statement) -> Select:
    toks = stmt.tokens
    as_of = None
    end = stmt.end + 1
    # ``... AS OF t`` at the end, outside parentheses (Materialize's syntax)
    if len(toks) >= 3 and toks[-3].text.upper() == "AS" and toks[-2].text.upper() == "OF":
        as_of = _as_of_value(stmt, toks[-1])
        end = toks[-3].start
    return Select(stmt, _parse_query(stmt, stmt.start, end), as_of)


def _explain(stmt: Statement) -> Explain:
    first = stmt.tokens[0]
    rest = stmt.text[first.end + 1 : stmt.end + 1]
    if not rest.strip():
        raise stmt.error("EXPLAIN needs a query: EXPLAIN SELECT ... (or EXPLAIN VIEW name)")
    words = rest.split()  # (sqlglot may read what follows EXPLAIN as one string)
    if len(words) == 2 and words[0].upper() == "VIEW":
        return Explain(stmt, None, words[1])
    return Explain(stmt, _parse_query(stmt, first.end + 1, stmt.end + 1))


_DROPPABLE = ("SOURCE", "VIEW", "SINK")


def _drop(stmt: Statement) -> Drop:
    fix = "write DROP SOURCE|VIEW|SINK [IF EXISTS] name [CASCADE]"
    c = _Cursor(stmt)
    c.expect("DROP", fix=fix)
    what = c.word()
    if what not in _DROPPABLE:
        raise c.fail(f"DROP {c.peek().text if c.peek() else ''}: {fix}")  # type: ignore[union-attr]
    c.i += 1
    if_exists = c.accept("IF", "EXISTS")
    name = c.name(f"the {what.lower()}'s name", fix)
    cascade = c.accept("CASCADE")
    if not cascade:
        c.accept("RESTRICT")
    # Every statement's parser ends, and the next begins, with its cursor alike: the
    # grammars differ.
    c.end(fix)
    return Drop(stmt, what, name, if_exists, cascade)


def _show(stmt: Statement) -> Show:
    fix = "write SHOW SOURCES, SHOW VIEWS or SHOW SINKS"
    c = _Cursor(stmt)
    c.expect("SHOW", fix=fix)
    # (sqlglot reads what follows SHOW as one command string)
    what = " ".join(t.text for t in stmt.tokens[1:]).upper().split()
    if what not in (["SOURCES"], ["VIEWS"], ["SINKS"]):
        raise c.fail(fix)
    return Show(stmt, what[0])


_PARSERS = {
    "CREATE SOURCE": _create_source,
    "CREATE VIEW": _create_view,
    "CREATE SINK": _create_sink,
    "PUBLISH": _publish,
    "SUBSCRIBE": _subscribe,
    "SELECT": _select,
    "EXPLAIN": _explain,
    "DROP": _drop,
    "SHOW": _show,
}


def parse_statement(stmt: Statement) -> Parsed_:
    """The statement's meaning, or a `SqlError` naming it, where, and the fix."""
    parser = _PARSERS.get(stmt.kind)
    if parser is None:
        known = ", ".join(_PARSERS)
        raise stmt.error(f"unknown statement; sealtime runs {known}", construct=stmt.kind)
    try:
        return parser(stmt)
    except SqlError as e:
        if e.construct == "syntax":
            raise SqlError(f"{stmt.title}: syntax", e.reason, line=e.line, col=e.col) from e
        raise


def parse_text(text: str) -> list[Parsed_]:
    """Every statement of `text`, parsed (the first bad one raises)."""
    return [parse_statement(s) for s in split(text)]
