"""Parsing SQL text with sqlglot's Spark dialect, and locating constructs in it.

The dialect is sqlglot's ``spark`` dialect with one addition: Flink's window
table-valued functions take a table argument written ``TABLE t`` (and, for
``SESSION``, ``TABLE t PARTITION BY k``), which Spark's grammar has no rule for. The
`SealtimeSpark` dialect parses ``TUMBLE``/``HOP``/``SESSION``/``CUMULATE`` calls with
such an argument into an ``Anonymous`` function whose first argument is an
``exp.Table`` (with the ``PARTITION BY`` columns in its ``partition`` arg); everything
else is Spark's grammar unchanged.

`Parsed` keeps the text and sqlglot's tokens, so that an error can name the line and
column of a construct (`Parsed.locate`).

>>> p = parse("SELECT k,\\n  SUM(v) FROM t\\nGROUP BY k\\nORDER BY k")
>>> p.locate(p.tree.args["order"], keyword="ORDER")
(4, 1)
>>> p.locate(p.tree.expressions[1])
(2, 3)
"""

from __future__ import annotations

import typing as t
from dataclasses import dataclass

from sqlglot import exp
from sqlglot.dialects.spark import Spark
from sqlglot.errors import ParseError, TokenError
from sqlglot.parsers.spark import SparkParser
from sqlglot.tokens import Token, TokenType

from .errors import SqlError

__all__ = ["Parsed", "SealtimeSpark", "WINDOW_TVFS", "parse", "parse_statements"]

#: Flink's window table-valued functions (CUMULATE is parsed so it can be refused by name)
WINDOW_TVFS = ("TUMBLE", "HOP", "SESSION", "CUMULATE")


class _Parser(SparkParser):
    """Spark's parser, plus ``TUMBLE(TABLE t [PARTITION BY ...], ...)`` and friends."""

    FUNCTION_PARSERS: t.ClassVar[dict[str, t.Callable]] = {
        **SparkParser.FUNCTION_PARSERS,
        **{name: (lambda n: lambda self: self._parse_window_tvf(n))(name) for name in WINDOW_TVFS},
    }

    def _parse_window_tvf(self, name: str) -> exp.Expr:
        name_token = self._tokens[self._index - 2]  # (the "(" is consumed already)
        node = self._parse_window_tvf_args(name)
        return node.update_positions(name_token)

    def _parse_window_tvf_args(self, name: str) -> exp.Expr:
        args: list[exp.Expr] = []
        if self._match(TokenType.TABLE):
            table = self._parse_table_parts()
            if self._match(TokenType.PARTITION_BY) or self._match_text_seq("PARTITION", "BY"):
                # Flink: ``PARTITION BY k`` or ``PARTITION BY (k1, k2)``
                if self._match(TokenType.L_PAREN):
                    keys = self._parse_csv(self._parse_column)
                    self._match_r_paren()
                else:
                    keys = [self._parse_column()]
                table.set("partition", exp.Tuple(expressions=keys))
            args.append(table)
            if not self._match(TokenType.COMMA):
                self._match_r_paren()
                return self.expression(exp.Anonymous(this=name, expressions=args))
        args.extend(self._parse_csv(lambda: self._parse_lambda(alias=False)))
        return self.expression(exp.Anonymous(this=name, expressions=args))


class SealtimeSpark(Spark):
    """sqlglot's Spark dialect with Flink's window TVF table arguments."""

    class Tokenizer(Spark.Tokenizer):
        # SESSION is a keyword token in sqlglot (``SET SESSION ...``); here it is the
        # window function's name.
        KEYWORDS: t.ClassVar = {k: v for k, v in Spark.Tokenizer.KEYWORDS.items() if k != "SESSION"}

    Parser = _Parser


DIALECT = SealtimeSpark()


@dataclass
class Parsed:
    """A parsed statement: the sqlglot tree, the query text and its tokens."""

    tree: exp.Expr
    text: str
    tokens: list[Token]

    def position(self, offset: int) -> tuple[int, int]:
        """(line, column), both 1-based, of character `offset` of the text."""
        line = self.text.count("\n", 0, offset) + 1
        col = offset - (self.text.rfind("\n", 0, offset) + 1) + 1
        return line, col

    def start_of(self, node: exp.Expr | None) -> int | None:
        """The smallest text offset of any token sqlglot recorded inside `node`."""
        if node is None:
            return None
        starts = [s for s in map(_meta_start, node.walk()) if s is not None]
        if not starts:
            return None
        start = min(starts)
        if isinstance(node, exp.Func) and not self._word_call_at(start):
            # (sqlglot records no token for some calls, e.g. percentile_approx, only
            # for their arguments: the call starts at the name before its "(")
            i = start - 1
            while i >= 0 and self.text[i].isspace():
                i -= 1
            if i >= 0 and self.text[i] == "(":
                i -= 1
                while i >= 0 and self.text[i].isspace():
                    i -= 1
                j = i
                while j >= 0 and (self.text[j].isalnum() or self.text[j] == "_"):
                    j -= 1
                if j < i:
                    start = j + 1
        return start

    def _word_call_at(self, offset: int) -> bool:
        """Does a name followed by ``(`` start at `offset`?"""
        end = offset
        while end < len(self.text) and (self.text[end].isalnum() or self.text[end] == "_"):
            end += 1
        return end > offset and self.text[end:].lstrip().startswith("(")

    def locate(
        self,
        node: exp.Expr | None,
        keyword: str | None = None,
        fallback: exp.Expr | None = None,
    ) -> tuple[int | None, int | None]:
        """(line, column) of `node`: of its first token, or with `keyword` (e.g.
        ``"ORDER"``, ``"JOIN"``) of the last token with that text before the node's
        first token. `fallback` is used when `node` holds no positioned token."""
        start = self.start_of(node)
        if start is None and fallback is not None:
            start = self.start_of(fallback)
        if start is None:
            start = len(self.text)
            if keyword is None:
                return None, None
        if keyword is not None:
            words = keyword.upper().split()
            for i in range(len(self.tokens) - 1, -1, -1):
                tok = self.tokens[i]
                if tok.start >= start:
                    continue
                if tok.text.upper().split()[:1] == words[:1]:
                    return self.position(tok.start)
            return (None, None) if start >= len(self.text) else self.position(start)
        return self.position(start)


def _meta_start(node: exp.Expr) -> int | None:
    meta = getattr(node, "_meta", None)
    return meta.get("start") if meta else None


def raise_parse_error(text: str, error: Exception) -> t.NoReturn:
    errors = getattr(error, "errors", None) or []
    line = col = None
    detail = str(error).splitlines()[0] if str(error) else type(error).__name__
    if errors:
        first = errors[0]
        line = first.get("line")
        col = first.get("col")
        detail = first.get("description") or detail
        if line is not None and col is not None:
            # sqlglot's col is the last character of the offending token; point at its
            # first character.
            highlight = first.get("highlight") or ""
            col = max(1, col - len(highlight) + 1) if highlight else col
    raise SqlError("syntax", f"{_plain(detail)} (Spark SQL dialect)", line=line, col=col) from error


def _plain(detail: str) -> str:
    """sqlglot's message without its class names (the user wrote SQL, not sqlglot).

    >>> _plain("Required keyword: 'this' missing for <class 'sqlglot.expressions.query.Where'>")
    'WHERE is incomplete: an expression is missing'
    """
    import re

    missing = re.match(r"Required keyword: '(\w+)' missing for <class '[\w.]*\.(\w+)'>", detail)
    if missing:
        return f"{missing.group(2).upper()} is incomplete: an expression is missing"
    return re.sub(r"<class '[\w.]*\.(\w+)'>", lambda m: m.group(1).upper(), detail)


def sql_tokens(text: str) -> list[Token]:
    try:
        return DIALECT.tokenize(text)
    except TokenError as e:
        raise_parse_error(text, e)


def parse(text: str) -> Parsed:
    """Parse one statement (a query, or a ``CREATE``/other statement for the CLI)."""
    statements = parse_statements(text)
    if len(statements) != 1:
        raise SqlError(
            "statement list",
            f"expected one statement, got {len(statements)}; run them one at a time",
        )
    return statements[0]


def _trailing_comma(text: str, tokens: list[Token]) -> None:
    """Refuse ``SELECT a, FROM t`` as Spark 4 does (sqlglot would read it as ``SELECT
    a FROM t``).

    >>> parse("SELECT k,\\n  FROM t")
    Traceback (most recent call last):
    ...
    sealtime.sql.errors.SqlError: syntax at line 1, column 9: [TRAILING_COMMA_IN_SELECT] ...
    """
    for comma, after in zip(tokens, tokens[1:]):
        if comma.token_type == TokenType.COMMA and after.token_type == TokenType.FROM:
            line, col = Parsed(exp.Null(), text, tokens).position(comma.start)
            raise SqlError(
                "syntax",
                "[TRAILING_COMMA_IN_SELECT] a comma before FROM: remove it, or add the "
                "missing column",
                line=line,
                col=col,
            )


def parse_statements(text: str) -> list[Parsed]:
    """Parse a text of statements separated by ``;``; each keeps the whole text (so
    positions are positions in the file) and its own tree."""
    if not isinstance(text, str):
        raise TypeError(f"SQL text must be a str, got {type(text).__name__}")
    tokens = sql_tokens(text)
    _trailing_comma(text, tokens)
    try:
        trees = DIALECT.parser().parse(tokens, text)
    except ParseError as e:
        raise_parse_error(text, e)
    return [Parsed(tree, text, tokens) for tree in trees if tree is not None]
