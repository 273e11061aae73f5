"""Failures an operator can act on: one short line first, the rest in a log file.

A full disk under a Spark job fails with hundreds of lines of Java and Python stack
trace; the line that matters (``[Errno 28] No space left on device`` and the path) is
somewhere inside. Every ``sealtime`` command runs through `run_command`, which

* sends the process's file descriptor 2 — where the Spark JVM writes its log — to the
  command's log file, ``<data dir>/logs/<command>.log`` (appended, one header line per
  start), or, when the data dir cannot take it (full, read-only, a remote URI, a command
  without one), ``<temp dir>/sealtime-logs/<command>-<data dir's name>.log``; Python's
  ``sys.stderr``, where sealtime writes what the user must read (the SQL shell's errors),
  stays on the terminal;
* on a failure prints ONE line first — what failed, the path or setting, the errno and
  the fix (`summarize`) — then where the full trace went; ``--verbose`` keeps stderr on
  the terminal and prints the trace there after the line.

`summarize` reads the whole chain of causes: Python exceptions (``__cause__``,
``__context__``, an `OSError`'s ``errno`` and ``filename``) and the text Spark wraps the
other failures in — a ``Py4JJavaError`` carries the JVM's ``Caused by:`` chain
(``java.io.IOException: No space left on device``, ``FileNotFoundException: /p
(Read-only file system)``), a ``PythonException`` the worker's traceback
(``OSError: [Errno 28] ...: '/p'``), SQLite its own words (``database or disk is full``).

>>> s = summarize(OSError(28, "No space left on device", "/d/log/s/part-1.parquet"))
>>> s.errno, s.path
(28, '/d/log/s/part-1.parquet')
>>> print(s.line("run"))  # doctest: +ELLIPSIS
sealtime run: failed: No space left on device [Errno 28 ENOSPC] writing /d/log/s/part-1.parquet; fix: free space on the filesystem holding ... (df -h ...), or move the data dir to a larger disk; then run the same command again: it resumes from its last tick
"""

from __future__ import annotations

import datetime as _dt
import errno as _errno
import os
import re
import sys
import tempfile
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO

__all__ = ["CommandLog", "Summary", "run_command", "summarize"]

#: exit status of a failure (the refusals and fencing keep theirs: 3 and 4)
FAILED = 1

# Errnos an operator can act on, and the words other layers (the JVM, SQLite, pyarrow)
# use for them when they carry no number.
_KNOWN = (
    _errno.ENOSPC,
    _errno.EDQUOT,
    _errno.EROFS,
    _errno.EACCES,
    _errno.EPERM,
    _errno.ENOENT,
    _errno.EMFILE,
    _errno.ENFILE,
    _errno.EIO,
)
_WORDS = {
    "database or disk is full": _errno.ENOSPC,
    "attempt to write a readonly database": _errno.EROFS,
    **{os.strerror(code): code for code in _KNOWN},
}
_ERRNO_TEXT = re.compile(r"\[errno (\d+)\]\s*([^:\n'\"]*)(?::\s*'([^'\n]+)')?", re.IGNORECASE)
# A path in a message: Java's ``/p (Read-only file system)``, Spark's ``file:/p``, a
# quoted or bare absolute path.
_PATH = re.compile(r"(?:file:)?(/(?:[\w.@%+=~-]+/)*[\w.@%+=~-]+)")
_CODE = re.compile(r"\.(py|pyc|java|scala|class|jar)$|site-packages|/lib/python|/jvm/")


@dataclass(frozen=True)
class Summary:
    """One failure, as the line an operator reads first.

    * `what`: what failed, in words (``No space left on device``, or the error's own
      message when sealtime raised it on purpose: it names the setting and the fix);
    * `errno` (None: not an operating-system error), `path` (the file or directory it
      concerns, None: unknown);
    * `fix`: what to do (empty when `what` says it already);
    * `status`: the command's exit status.
    """

    what: str
    errno: int | None = None
    path: str | None = None
    fix: str = ""
    status: int = FAILED
    #: how the line starts after the command's name: ``failed``, ``refused``, ``stopped``
    verb: str = "failed"

    def line(self, command: str) -> str:
        """The one line printed first."""
        text = f"sealtime {command}: {self.verb}: {self.what}"
        if self.errno is not None:
            name = _errno.errorcode.get(self.errno, "?")
            text += f" [Errno {self.errno} {name}]"
            if self.path:
                text += f" {_doing(self.errno)} {self.path}"
        elif self.path:
            text += f" ({self.path})"
        if self.fix:
            text += f"; fix: {self.fix}"
        return text


def summarize(exc: BaseException, *, data_dir: str | None = None) -> Summary:
    """The `Summary` of `exc` (see the module docstring). `data_dir` is the command's
    data dir: a path under it is the likeliest to matter, and it stands for the path
    when the failure names none (pyarrow's write errors do not).

    >>> from sealtime.errors import ConfigError
    >>> summarize(ConfigError("Dataflow(tick='x'): not a duration; use e.g. tick='1s'")).line("run")
    "sealtime run: failed: Dataflow(tick='x'): not a duration; use e.g. tick='1s'"
    >>> text = "java.io.FileNotFoundException: /d/shards/x/s-1 (Read-only file system)"
    >>> s = summarize(RuntimeError(text), data_dir="/d")
    >>> s.errno, s.path
    (30, '/d/shards/x/s-1')
    """
    from .errors import DataDirOwnedError, FencedError, SealtimeError

    chain = list(_chain(exc))
    for e in chain:
        if isinstance(e, DataDirOwnedError):
            return Summary(str(e), status=3, verb="refused")
        if isinstance(e, FencedError):
            return Summary(str(e), status=4, verb="stopped")
    code, path = _os_error(chain, data_dir)
    if code is not None:
        what = os.strerror(code)
        if path is None:
            path = data_dir
        return Summary(what, code, path, _fix(code, path))
    first = chain[0]
    message = _first_line(str(first))
    if isinstance(first, SealtimeError):
        return Summary(message)
    return Summary(
        f"{type(first).__name__}: {message}" if message else type(first).__name__,
        fix="not a failure sealtime knows: the full trace says where it happened "
        "(a bug in sealtime is worth reporting with it)",
    )


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """`exc` and its causes and contexts, each once."""
    seen: set[int] = set()
    stack = [exc]
    while stack:
        e = stack.pop(0)
        if id(e) in seen:
            continue
        seen.add(id(e))
        yield e
        stack += [c for c in (e.__cause__, e.__context__) if c is not None]


def _os_error(chain: list[BaseException], data_dir: str | None) -> tuple[int | None, str | None]:
    """The errno and path of the first operating-system failure in `chain`: an
    `OSError` with its errno, else one named in a message (Spark's wrapped Java and
    Python errors, SQLite's words)."""
    texts = []
    for e in chain:
        if isinstance(e, OSError) and e.errno in _errno.errorcode:
            path = e.filename if isinstance(e.filename, str) else None
            return e.errno, path or _best_path([str(e)], data_dir)
        texts.append(f"{type(e).__name__}: {e}")
        texts += _java_causes(e)
    for text in texts:
        m = _ERRNO_TEXT.search(text)
        if m:
            code = int(m.group(1))
            return code, m.group(3) or _best_path([text], data_dir)
        for words, code in _WORDS.items():
            at = text.find(words)
            if at >= 0:
                # (the path nearest before the words: Java's "/p (Read-only file system)")
                near = _best_path([text[max(0, at - 400) : at]], data_dir, last=True)
                return code, near or _best_path([text], data_dir)
    return None, None


def _java_causes(e: BaseException) -> list[str]:
    """The JVM's chain of causes behind a PySpark error (``Py4JJavaError.java_exception``,
    a captured error's origin), as ``class: message`` texts — PySpark prints the JVM's
    trace only when ``spark.sql.pyspark.jvmStacktrace.enabled`` is set."""
    java = getattr(e, "java_exception", None) or getattr(e, "_origin", None)
    out: list[str] = []
    try:
        while java is not None and len(out) < 20:
            out.append(str(java.toString()))
            java = java.getCause()
    except Exception:  # (the JVM is gone: the Python texts are all there is)
        pass
    return out


def _best_path(texts: list[str], data_dir: str | None, *, last: bool = False) -> str | None:
    """A path the texts name that is not code: one under `data_dir` first (the last one
    found when `last`), else any."""
    found = [p for t in texts for p in _PATH.findall(t) if not _CODE.search(p) and p != "/"]
    if not found:
        return None
    if last:
        found.reverse()
    if data_dir:
        root = os.path.abspath(data_dir).rstrip("/") + "/"
        inside = [p for p in found if p.startswith(root) or p == root.rstrip("/")]
        if inside:
            return inside[0].rstrip(".")
    return found[0].rstrip(".")


def _doing(code: int) -> str:
    """The verb of the line: what the process was doing with the path."""
    if code in (_errno.ENOSPC, _errno.EDQUOT, _errno.EROFS, _errno.EIO):
        return "writing"
    return "at"


def _fix(code: int, path: str | None) -> str:
    """What an operator does about errno `code` on `path`."""
    where = path or "the data dir"
    again = "then run the same command again: it resumes from its last tick"
    if code in (_errno.ENOSPC, _errno.EDQUOT):
        mount = _mount_of(path) if path else None
        limit = "quota" if code == _errno.EDQUOT else "space"
        return (
            f"free {limit} on the filesystem holding {mount or where} "
            f"(df -h {mount or where}), or move the data dir to a larger disk; {again}"
        )
    if code == _errno.EROFS:
        return (
            f"{where} is on a read-only filesystem: remount it read-write or give a "
            f"writable --data-dir; {again}"
        )
    if code in (_errno.EACCES, _errno.EPERM):
        return (
            f"this user ({_user()}) may not write {where}: fix its owner or permissions "
            f"(ls -ld {where}) or give a writable --data-dir; {again}"
        )
    if code == _errno.ENOENT:
        return f"{where} does not exist: create it, or correct the path or setting naming it"
    if code in (_errno.EMFILE, _errno.ENFILE):
        return f"too many open files: raise the limit (ulimit -n); {again}"
    if code == _errno.EIO:
        return f"the device under {where} reported an I/O error: check it (dmesg); {again}"
    return "see the full trace"


def _mount_of(path: str) -> str | None:
    """The existing directory nearest to `path` on the same filesystem: its mount point
    when it can be found, else the deepest existing parent (ENOSPC paths often do not
    exist: the write that failed created nothing)."""
    p = os.path.abspath(path)
    while p != "/" and not os.path.isdir(p):
        p = os.path.dirname(p)
    existing = p
    try:
        dev = os.stat(existing).st_dev
        while p != "/" and os.stat(os.path.dirname(p)).st_dev == dev:
            p = os.path.dirname(p)
    except OSError:
        return existing
    return p if os.path.ismount(p) else existing


def _user() -> str:
    try:
        import pwd

        return pwd.getpwuid(os.geteuid()).pw_name
    except (ImportError, KeyError, OSError):
        return str(os.getuid()) if hasattr(os, "getuid") else "?"


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0].strip() if text.strip() else ""


# ---------------------------------------------------------------------- the log file
class CommandLog:
    """Where one command's diagnostics go (see the module docstring): `path`, and the
    `terminal` stream the summary is printed on.

    >>> import io, tempfile
    >>> d = tempfile.mkdtemp()
    >>> with CommandLog("run", d, redirect=False, terminal=io.StringIO()) as log:
    ...     log.path == os.path.join(d, "logs", "run.log")
    True
    """

    def __init__(
        self,
        command: str,
        data_dir: str | None,
        *,
        redirect: bool = True,
        terminal: IO[str] | None = None,
    ) -> None:
        self.command = command
        self.data_dir = data_dir
        self.terminal: IO[str] = terminal or sys.stderr
        self._redirect = redirect
        self._saved: int | None = None
        self._stderr: IO[str] = sys.stderr
        self._file: IO[str] | None = None
        self.path = self._open()

    def _open(self) -> str:
        for path in (_log_in(self.data_dir, self.command), _fallback(self.command, self.data_dir)):
            if path is None:
                continue
            try:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                self._file = open(path, "a", encoding="utf-8", buffering=1)  # noqa: SIM115
                stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
                self._file.write(f"=== {stamp} sealtime {self.command} (pid {os.getpid()})\n")
                return path
            except OSError:
                self._file = None
        return os.devnull

    def __enter__(self) -> CommandLog:
        if self._redirect and self._file is not None and _is_fd2(self.terminal):
            # The Spark JVM (a child process, started later) writes its log to fd 2: fd 2
            # becomes the log file. What sealtime prints for the user on sys.stderr (the
            # SQL shell's errors, this summary) keeps the terminal, on a descriptor of
            # its own.
            sys.stderr.flush()
            self._saved = os.dup(2)
            os.dup2(self._file.fileno(), 2)
            self.terminal = open(self._saved, "w", buffering=1, closefd=False)  # noqa: SIM115
            self._stderr, sys.stderr = sys.stderr, self.terminal
        return self

    def __exit__(self, *exc: object) -> None:
        if self._saved is not None:
            self.terminal.flush()
            sys.stderr = self._stderr
            os.dup2(self._saved, 2)
            os.close(self._saved)
            self._saved = None
        if self._file is not None:
            self._file.close()

    def write_trace(self, text: str) -> str:
        """Append `text` to the log (or, if that cannot be written — a full disk — to
        the fallback file). Returns where it went."""
        if self._file is not None:
            try:
                self._file.write(text)
                self._file.flush()
                os.fsync(self._file.fileno())
                return self.path
            except OSError:
                pass
        path = _fallback(self.command, self.data_dir)
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "a", encoding="utf-8") as f:
                f.write(text)
            return path
        except OSError:
            return "(nowhere: no writable log location)"


def _is_fd2(stream: IO[str]) -> bool:
    try:
        return stream.fileno() == 2
    except (AttributeError, OSError, ValueError):
        return False  # (a stream of a test, or already redirected)


def _log_in(data_dir: str | None, command: str) -> str | None:
    """``<data dir>/logs/<command>.log`` for a local data dir (None otherwise)."""
    if not data_dir or "://" in data_dir and not data_dir.startswith("file://"):
        return None
    local = data_dir[len("file://") :] if data_dir.startswith("file://") else data_dir
    return os.path.join(os.path.abspath(local), "logs", f"{command}.log")


def _fallback(command: str, data_dir: str | None) -> str:
    """The log file when the data dir cannot take one (one per data dir name)."""
    tag = re.sub(r"[^\w.-]+", "_", os.path.basename(os.path.normpath(data_dir))) if data_dir else ""
    name = f"{command}-{tag}.log" if tag else f"{command}.log"
    return os.path.join(tempfile.gettempdir(), "sealtime-logs", name)


# ---------------------------------------------------------------------- the entry
def run_command(
    command: str,
    body: Callable[[], int],
    *,
    data_dir: str | None = None,
    verbose: bool = False,
    terminal: IO[str] | None = None,
) -> int:
    """Run one ``sealtime`` command: `body` returns its exit status. Diagnostics go to
    the command's log (`CommandLog`) unless `verbose`; a failure prints its `Summary`
    line first, then where the trace is (or, `verbose`, the trace), and returns its
    status.

    >>> import io, tempfile
    >>> out = io.StringIO()
    >>> def body():
    ...     raise OSError(13, "Permission denied", "/srv/d/log")
    >>> run_command("run", body, data_dir=tempfile.mkdtemp(), terminal=out)
    1
    >>> out.getvalue().splitlines()[0]  # doctest: +ELLIPSIS
    'sealtime run: failed: Permission denied [Errno 13 EACCES] at /srv/d/log; fix: this user ...'
    """
    with CommandLog(command, data_dir, redirect=not verbose, terminal=terminal) as log:
        try:
            return body()
        except KeyboardInterrupt:
            print(f"sealtime {command}: interrupted", file=log.terminal, flush=True)
            return 130
        except Exception as exc:
            summary = summarize(exc, data_dir=data_dir)
            trace = "".join(traceback.format_exception(exc))
            where = log.write_trace(summary.line(command) + "\n" + trace)
            print(summary.line(command), file=log.terminal, flush=True)
            if verbose:
                print(trace, file=log.terminal, end="", flush=True)
            elif summary.status == FAILED:
                print(
                    f"  the full trace is in {where} (--verbose prints it here)",
                    file=log.terminal,
                    flush=True,
                )
            return summary.status
