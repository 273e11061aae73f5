"""Passwords of the wire front end: the password file, md5 and SCRAM-SHA-256.

The password file (``--password-file F``) has one user per line::

    # comments and blank lines are ignored
    alice:correct horse battery staple           a password in clear (SCRAM or md5)
    bob:SCRAM-SHA-256$4096:c2FsdA==$...:...      a SCRAM verifier, as PostgreSQL stores it
    carol:md5e2fc714c4727ee9395f324cd2e7f331f    an md5 hash, md5(password + user)

The user name ends at the first ``:``. A verifier lets a client in without the file
holding its password: make one with `scram_verifier` (``python -c "from
sealtime.serve.pgwire.auth import scram_verifier; print(scram_verifier('pw'))"``).

Which exchange a client goes through is the server's `auth_method` (``scram-sha-256``,
the default, or ``md5``), except that a SCRAM verifier only allows SCRAM and an md5
hash only md5 (PostgreSQL's rule). SCRAM is RFC 5802/7677 as PostgreSQL does it (no
channel binding without TLS; the user name of the client-first message is ignored and
may be empty, as libpq sends it — which the `scramp` library refuses, so the exchange
is written here with hashlib and hmac, see docs/pgwire.md). A user not in the file goes through the same
exchange and fails the same way, so the reply does not tell whether the user exists.

>>> creds = parse_password_file("alice:pw\\n# x\\ncarol:" + md5_hash("pw", "carol") + "\\n")
>>> sorted(creds), type(creds["alice"]).__name__, creds["carol"].method
(['alice', 'carol'], 'PlainPassword', 'md5')
>>> salt = b"1234"
>>> md5_check(creds["carol"], "carol", salt, md5_client_response("pw", "carol", salt))
True
>>> md5_check(creds["alice"], "alice", salt, md5_client_response("wrong", "alice", salt))
False
>>> parse_verifier(scram_verifier("pw", salt=b"0123456789abcdef"))[3]
4096
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
from dataclasses import dataclass

from ...errors import ConfigError

__all__ = [
    "AUTH_METHODS",
    "Credential",
    "Md5Hash",
    "PlainPassword",
    "ScramVerifier",
    "load_password_file",
    "md5_check",
    "md5_client_response",
    "md5_hash",
    "parse_password_file",
    "parse_verifier",
    "ScramExchange",
    "scram_verifier",
]

AUTH_METHODS = ("scram-sha-256", "md5")
SCRAM = "SCRAM-SHA-256"
_ITERATIONS = 4096


#: a user's SCRAM-SHA-256 keys: (salt, StoredKey, ServerKey, iterations), RFC 5802
_ScramKeys = tuple[bytes, bytes, bytes, int]


class Credential:
    """What the password file holds for one user, in one of three forms (the classes
    below); each form says which exchanges it can answer, so the server never asks
    which form it has. `method` is the exchange the form forces (None: the server's
    `auth_method`)."""

    method: str | None = None

    def md5_stored(self, user: str) -> str | None:
        """PostgreSQL's stored md5 password (``md5`` + hex) of `user`; None: this form
        cannot answer an md5 challenge."""
        return None

    def scram_keys(self) -> _ScramKeys | None:
        """The SCRAM-SHA-256 keys of this user; None: this form cannot answer SCRAM."""
        return None


@dataclass(frozen=True)
class PlainPassword(Credential):
    """``user:password``: answers SCRAM (keys derived per exchange) and md5."""

    password: str

    def md5_stored(self, user: str) -> str | None:
        return md5_hash(self.password, user)

    def scram_keys(self) -> _ScramKeys | None:
        salt = os.urandom(16)
        return (salt, *_scram_keys(self.password, salt, _ITERATIONS), _ITERATIONS)


@dataclass(frozen=True)
class ScramVerifier(Credential):
    """``user:SCRAM-SHA-256$...``: PostgreSQL's verifier; SCRAM only."""

    verifier: str
    method = "scram-sha-256"

    def __post_init__(self) -> None:
        parse_verifier(self.verifier)  # (a broken verifier is refused when the file is read)

    def scram_keys(self) -> _ScramKeys | None:
        return parse_verifier(self.verifier)


@dataclass(frozen=True)
class Md5Hash(Credential):
    """``user:md5<hex>``: PostgreSQL's md5(password + user); md5 only."""

    digest: str
    method = "md5"

    def md5_stored(self, user: str) -> str | None:
        return self.digest


def md5_hash(password: str, user: str) -> str:
    """PostgreSQL's stored md5 password: ``md5`` + md5(password + user)."""
    return "md5" + hashlib.md5((password + user).encode()).hexdigest()


def md5_client_response(password: str, user: str, salt: bytes) -> str:
    """What a client answers an md5 challenge with (for tests and docs)."""
    inner = md5_hash(password, user)[3:]
    return "md5" + hashlib.md5(inner.encode() + salt).hexdigest()


def md5_check(cred: Credential | None, user: str, salt: bytes, response: str) -> bool:
    """Does `response` prove the password of `cred` (None: unknown user: never)?"""
    hashed = cred.md5_stored(user) if cred is not None else None
    if hashed is None:
        hashed = "md5" + secrets.token_hex(16)  # same work, never equal
    expected = "md5" + hashlib.md5(hashed[3:].encode() + salt).hexdigest()
    return hmac.compare_digest(expected.encode(), response.encode())


def _hmac(key: bytes, msg: bytes) -> bytes:
    return hmac.new(key, msg, hashlib.sha256).digest()


def _scram_keys(password: str, salt: bytes, iterations: int) -> tuple[bytes, bytes]:
    """(StoredKey, ServerKey) of RFC 5802 for `password`."""
    salted = hashlib.pbkdf2_hmac("sha256", password.encode("utf-8"), salt, iterations)
    stored = hashlib.sha256(_hmac(salted, b"Client Key")).digest()
    return stored, _hmac(salted, b"Server Key")


def scram_verifier(
    password: str, *, iterations: int = _ITERATIONS, salt: bytes | None = None
) -> str:
    """A SCRAM-SHA-256 verifier of `password` in PostgreSQL's format
    (``SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>``, base64)."""
    salt = salt or os.urandom(16)
    stored, server = _scram_keys(password, salt, iterations)
    b64 = lambda b: base64.b64encode(b).decode()  # noqa: E731
    return f"{SCRAM}${iterations}:{b64(salt)}${b64(stored)}:{b64(server)}"


def parse_verifier(text: str) -> tuple[bytes, bytes, bytes, int]:
    """``(salt, stored_key, server_key, iterations)`` of a verifier (scramp's auth info)."""
    try:
        mech, rest = text.split("$", 1)
        head, keys = rest.split("$", 1)
        iterations, salt = head.split(":", 1)
        stored, server = keys.split(":", 1)
        if mech != SCRAM:
            raise ValueError(mech)
        return (
            base64.b64decode(salt, validate=True),
            base64.b64decode(stored, validate=True),
            base64.b64decode(server, validate=True),
            int(iterations),
        )
    except ValueError as e:
        raise ConfigError(
            f"--password-file: {text[:20]!r}... is not a SCRAM-SHA-256 verifier "
            "(SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>, base64)"
        ) from e


def parse_password_file(text: str, path: str = "--password-file") -> dict[str, Credential]:
    """The users of a password file's `text` (see the module docstring)."""
    out: dict[str, Credential] = {}
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        user, sep, secret = line.partition(":")
        if not sep or not user or not secret:
            raise ConfigError(
                f"{path}, line {n}: expected user:password (or user:SCRAM-SHA-256$... / "
                "user:md5<hex>)"
            )
        cred: Credential
        if secret.startswith(SCRAM + "$"):
            cred = ScramVerifier(secret)
        elif len(secret) == 35 and secret.startswith("md5"):
            cred = Md5Hash(secret)
        else:
            cred = PlainPassword(secret)
        if user in out:
            raise ConfigError(f"{path}, line {n}: user {user!r} appears twice")
        out[user] = cred
    return out


def load_password_file(path: str) -> dict[str, Credential]:
    """`parse_password_file` of the file at `path` (a ConfigError naming it if unreadable)."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise ConfigError(f"--password-file {path}: cannot read it ({e.strerror})") from e
    return parse_password_file(text, f"--password-file {path}")


class ScramExchange:
    """The server's side of one SCRAM-SHA-256 exchange (RFC 5802, as PostgreSQL runs
    it) with the holder of `cred` (None, or an md5 hash: random keys, so the exchange
    runs and fails as for a wrong password).

    >>> ex = ScramExchange(PlainPassword("pw"))
    >>> server_first = ex.server_first("n,,n=,r=abc")
    >>> server_first.startswith("r=abc"), ex.client_final("c=biws,r=abc,p=AAAA")
    (True, None)
    """

    def __init__(self, cred: Credential | None) -> None:
        keys = cred.scram_keys() if cred is not None else None
        if keys is None:
            salt = os.urandom(16)
            keys = (salt, *_scram_keys(secrets.token_hex(), salt, _ITERATIONS), _ITERATIONS)
        salt, self.stored, self.server_key, self.iterations = keys
        self.salt = salt
        self.nonce = ""
        self.gs2 = ""
        self.first_bare = ""
        self.first_server = ""

    def server_first(self, client_first: str) -> str:
        """The answer to the client-first message (a ConfigError if it is malformed)."""
        if not client_first.startswith(("n,", "y,")):
            raise ConfigError("SCRAM: channel binding is not offered without TLS")
        comma = client_first.index(",", 2)
        self.gs2, self.first_bare = client_first[: comma + 1], client_first[comma + 1 :]
        attrs = dict(a.split("=", 1) for a in self.first_bare.split(",") if "=" in a)
        if not attrs.get("r"):
            raise ConfigError("SCRAM: the client-first message has no nonce")
        self.nonce = attrs["r"] + base64.b64encode(os.urandom(18)).decode()
        salt = base64.b64encode(self.salt).decode()
        self.first_server = f"r={self.nonce},s={salt},i={self.iterations}"
        return self.first_server

    def client_final(self, message: str) -> str | None:
        """The server-final message if the client's proof holds, else None."""
        without_proof, _, proof_b64 = message.rpartition(",p=")
        attrs = dict(a.split("=", 1) for a in without_proof.split(",") if "=" in a)
        if (
            attrs.get("r") != self.nonce
            or attrs.get("c") != base64.b64encode(self.gs2.encode()).decode()
        ):
            return None
        try:
            proof = base64.b64decode(proof_b64, validate=True)
        except ValueError:
            return None
        auth = f"{self.first_bare},{self.first_server},{without_proof}".encode()
        signature = _hmac(self.stored, auth)
        if len(proof) != len(signature):
            return None
        client_key = bytes(a ^ b for a, b in zip(proof, signature))
        if not hmac.compare_digest(hashlib.sha256(client_key).digest(), self.stored):
            return None
        return "v=" + base64.b64encode(_hmac(self.server_key, auth)).decode()
