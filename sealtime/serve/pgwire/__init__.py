"""The PostgreSQL wire front end of ``sealtime serve`` (docs/pgwire.md)."""
