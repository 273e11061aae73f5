"""sealtime's JVM helper: a few Java classes compiled against the installed Spark.

Some things PySpark cannot do from Python without a detour through the driver, above
all handing a large result to Python (`sealtime.spark.arrow_files`). The Java sources
live in ``sealtime/spark/java`` and are compiled here, on first use, with the ``javac``
of the JDK that runs Spark, against the jars of the installed PySpark, into a cache
keyed by the sources, the PySpark version and the compiler's version
(``$SEALTIME_CACHE`` or ``~/.cache/sealtime``). Compiling against the jars in use, not
shipping a prebuilt jar, means a Spark whose internals moved fails here, once, at
compile time, and sealtime falls back to PySpark's own paths; so does a machine with a
JRE but no ``javac``.

`helper_method(spark, ...)` loads a method of the helper into a running SparkContext:
the jar goes to the executors with ``addJar`` (their class loader deserialises the
tasks' functions) and the driver loads the class with its own class loader, so the
session needs no setting at start (a user's session and ``spark-submit`` work alike).

>>> sorted(p.name for p in java_sources())
['ArrowFiles.java']
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
import tempfile
import threading
import zipfile
from pathlib import Path
from typing import Any

__all__ = ["CACHE_ENV", "helper_jar", "helper_method", "java_sources"]

log = logging.getLogger(__name__)

#: environment variable naming the directory compiled helpers are cached in
CACHE_ENV = "SEALTIME_CACHE"
_JAVA_ROOT = Path(__file__).resolve().parent / "java"
_lock = threading.Lock()
_jar: Path | None | bool = False  # False: not tried yet; None: not available here
#: per SparkContext (its JVM object's hash): its class loader and methods of the helper
_loaded: dict[Any, dict[Any, Any]] = {}


def java_sources() -> list[Path]:
    """The helper's Java source files."""
    return sorted(_JAVA_ROOT.rglob("*.java"))


def _javac() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home and os.access(os.path.join(home, "bin", "javac"), os.X_OK):
        return os.path.join(home, "bin", "javac")
    return shutil.which("javac")


def _spark_jars() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent / "jars"


def _compiler_identity(javac: str) -> str:
    """What the cache key needs to know of the compiler, without running it: its real
    path, size and modification time, and the JDK's ``release`` file (the version of the
    JDK it belongs to). Running ``javac -version`` for the key started a JVM in every
    new process, 1-3 s of the first tick on a loaded 2-core machine
    (docs/dataplane.md, "Time to first result").

    >>> _compiler_identity("/nonexistent/bin/javac")
    '/nonexistent/bin/javac:-:-:'
    """
    real = os.path.realpath(javac)
    try:
        st = os.stat(real)
        stamp = f"{st.st_size}:{st.st_mtime_ns}"
    except OSError:
        stamp = "-:-"
    release = Path(real).resolve().parent.parent / "release"
    try:
        text = release.read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    return f"{real}:{stamp}:{text}"


def helper_jar() -> Path | None:
    """The helper compiled into a jar (built once, then cached), or None where it cannot
    be built: no ``javac``, or sources that do not compile against this Spark."""
    global _jar
    with _lock:
        if _jar is False:
            _jar = _build()
        return _jar  # type: ignore[return-value]


def _build() -> Path | None:
    import pyspark

    javac = _javac()
    if javac is None:
        log.info("sealtime: no javac (JDK) found; using PySpark's paths instead of its helper")
        return None
    key = hashlib.sha256()
    for part in (pyspark.__version__, _compiler_identity(javac)):
        key.update(part.encode())
    for src in java_sources():
        key.update(src.relative_to(_JAVA_ROOT).as_posix().encode())
        key.update(src.read_bytes())
    cache = Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "sealtime") / "jvm"
    jar = cache / f"sealtime-helper-{key.hexdigest()[:16]}.jar"
    if jar.exists():
        return jar
    try:  # only a build needs the compiler to run
        subprocess.run([javac, "-version"], capture_output=True, timeout=60, check=True)
    except (OSError, subprocess.SubprocessError) as exc:
        log.info("sealtime: javac does not run (%s); using PySpark's paths", exc)
        return None
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        classes = Path(tmp) / "classes"
        cmd = [javac, "-nowarn", "-encoding", "UTF-8", "-d", str(classes)]
        cmd += ["-cp", str(_spark_jars() / "*"), *map(str, java_sources())]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            log.warning(
                "sealtime: its JVM helper does not compile against PySpark %s; using "
                "PySpark's paths instead:\n%s",
                pyspark.__version__,
                done.stderr[-2000:],
            )
            return None
        built = Path(tmp) / jar.name
        with zipfile.ZipFile(built, "w", zipfile.ZIP_DEFLATED) as z:
            for path in sorted(classes.rglob("*.class")):
                z.write(path, path.relative_to(classes).as_posix())
        os.replace(built, jar)  # (atomic: processes building at once agree on the file)
    return jar


def helper_method(spark: Any, class_name: str, method: str, *params: str) -> Any | None:
    """The static `method` of the helper's class `class_name`, with parameters of the
    Java classes `params`, loaded into `spark`'s SparkContext, as a Python callable
    (None: the helper cannot be built here). Loading is once per SparkContext."""
    jar = helper_jar()
    if jar is None:
        return None
    sc = spark.sparkContext
    jvm, gateway = sc._jvm, sc._gateway
    with _lock:
        loaded = _loaded.setdefault(sc._jsc.sc().hashCode(), {})
        key = (class_name, method, params)
        if key not in loaded:
            if "loader" not in loaded:
                sc._jsc.addJar(str(jar))  # (executors deserialise its functions)
                urls = gateway.new_array(jvm.java.net.URL, 1)
                urls[0] = jvm.java.io.File(str(jar)).toURI().toURL()
                parent = jvm.java.lang.Thread.currentThread().getContextClassLoader()
                loaded["loader"] = jvm.java.net.URLClassLoader(urls, parent)
            cls = loaded["loader"].loadClass(class_name)
            types = gateway.new_array(jvm.java.lang.Class, len(params))
            for i, name in enumerate(params):
                types[i] = jvm.java.lang.Class.forName(name)
            loaded[key] = cls.getMethod(method, types)
        java_method = loaded[key]

    def call(*args: Any) -> Any:
        values = gateway.new_array(jvm.java.lang.Object, len(args))
        for i, value in enumerate(args):
            values[i] = value
        return java_method.invoke(None, values)

    return call
