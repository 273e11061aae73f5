"""Sort orders of order-sensitive operators: ``order_by="-price"`` as `OrderKey`s.

>>> parse_order_by(["-price", "id"])
(OrderKey(column='price', ascending=False), OrderKey(column='id', ascending=True))
>>> parse_order_by("")
Traceback (most recent call last):
...
sealtime.errors.ConfigError: top_k(order_by=...) takes column names ('-col' = descending), got ''
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import ConfigError

__all__ = ["OrderKey", "parse_order_by"]


@dataclass(frozen=True)
class OrderKey:
    """One sort key: a column, ascending or descending."""

    column: str
    ascending: bool = True


def parse_order_by(order_by: str | Sequence[str]) -> tuple[OrderKey, ...]:
    """``"price"`` ascending, ``"-price"`` descending; a list for several keys."""
    items = [order_by] if isinstance(order_by, str) else list(order_by)
    keys = []
    for item in items:
        if not isinstance(item, str) or not item.lstrip("-"):
            raise ConfigError(
                f"top_k(order_by=...) takes column names ('-col' = descending), got {item!r}"
            )
        keys.append(OrderKey(item.lstrip("-"), not item.startswith("-")))
    return tuple(keys)
