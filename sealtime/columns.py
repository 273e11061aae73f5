"""System column names of the data plane, defined once.

A collection is a set of updates ``(columns..., _time, _diff)`` (DESIGN.md §4). The
ingest log adds ``_late`` (the late reason, null for admitted rows) and ``_offset`` (the
row's position in the source's log: the last part of its event id); the rows of a
source with several outputs carry ``_subsource``. User columns may not use these names.

>>> TIME, DIFF, SYSTEM_COLUMNS
('_time', '_diff', ('_time', '_diff', '_late', '_offset'))
"""

from __future__ import annotations

__all__ = ["DIFF", "LATE", "OFFSET", "SUBSOURCE", "SYSTEM_COLUMNS", "TIME"]

#: the update's logical time (int64, milliseconds by default)
TIME = "_time"
#: the update's multiplicity (int64; negative = retraction)
DIFF = "_diff"
#: the ingest log's late reason (null: admitted)
LATE = "_late"
#: the ingest log's row position per source
OFFSET = "_offset"
#: which output of a multi-output source a row belongs to
SUBSOURCE = "_subsource"
#: the columns every logged update carries besides the user's
SYSTEM_COLUMNS = (TIME, DIFF, LATE, OFFSET)
