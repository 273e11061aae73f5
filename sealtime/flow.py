"""`st.Dataflow`: the Python dataflow API with SQL over it.

`sealtime.dataflow.Dataflow` builds plans from Python; `sealtime.sql` compiles SQL text
into the same API, so it stands above it. The user's `Dataflow` offers both, so it
stands above both: this module adds the SQL entry points (`sql`, `create_view`) to the
Python API's class, and ``st.Dataflow`` is this class.

>>> import tempfile, sealtime as st
>>> from sealtime.sources import Rows
>>> flow = st.Dataflow("doc", data_dir=tempfile.mkdtemp())
>>> _ = flow.source("s", Rows({"k": "string"}, [(1, {"k": "a"})]))
>>> flow.sql("SELECT k FROM s").columns
['k']
>>> flow.close()
"""

from __future__ import annotations

from . import sql as _sql
from .dataflow import dataflow as _api
from .dataflow.collection import Collection

__all__ = ["Dataflow"]


class Dataflow(_api.Dataflow):
    __doc__ = _api.Dataflow.__doc__

    def sql(self, query: str) -> Collection:
        """The collection a SQL query (Spark SQL dialect) defines over this dataflow's
        sources and views, named as tables (see docs/sql.md; errors: `SqlError`)."""
        return _sql.sql(self, query)

    def create_view(self, name: str, query: str | Collection) -> Collection:
        """Like `sql`, and register the result as table `name` for later SQL (a
        `Collection` may be registered too)."""
        return _sql.create_view(self, name, query)
