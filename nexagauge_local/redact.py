"""Credentials kept out of everything the tool writes or prints.

The rule: a credential is an API key (`--judge-api-key`, NEXAGAUGE_JUDGE_API_KEY, a profile's
`api_key_env`, `--target-api-key`, NEXAGAUGE_TARGET_API_KEY), a URL's userinfo
(`user:password@`), a secret-looking query or fragment parameter (`api-key`, `token`,
`password`, `sig`, ...; docs/judge-servers.md "Credentials"), or an Authorization header. Where
one is removed the text says so: a URL keeps its shape with `***` in place of the userinfo and
of each secret parameter's value
(`http://***@host:8000/v1?api-key=***`), an option's value becomes `***`, and a known secret
value found in free text (a server that echoes the key it was sent) becomes `[redacted]`.

Why one module: every writer (summary.json, manifest.json, report.html, error lines, the
server's own error texts) applies the same rule, so a new kind of credential is taught here
once. URLs are taken apart with urllib.parse, never by pattern; a pattern only finds where a
URL starts in free text.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import SplitResult, unquote, unquote_plus, urlsplit, urlunsplit

MASK = "***"  # in place of a userinfo, a secret parameter's value or an option's value
REDACTED = "[redacted]"  # in place of a known secret value found in free text

# Query/fragment parameter names that carry a credential (case-insensitive, '-' = '_'), and
# the name endings that do (`x_api_key`, `refresh_token`, `client_secret`, `db_password`).
SECRET_PARAMS = frozenset({
    "key", "api_key", "apikey", "token", "access_token", "auth", "authorization", "password",
    "passwd", "pwd", "pass", "secret", "sig", "signature", "credential", "credentials",
    "session", "jwt", "bearer",
})
SECRET_SUFFIXES = ("_key", "_token", "_secret", "_password", "_sig", "_signature")
# Options whose value is a credential, however it is written (`--opt V` or `--opt=V`).
SECRET_OPTIONS = ("--judge-api-key", "--target-api-key")
# Known secret values shorter than this are not searched for in free text: they would match
# ordinary words of a judge's answer and corrupt it.
MIN_SCRUBBED_LEN = 8

# Where a URL starts in free text (scheme://...); the URL itself is parsed by urllib.
_URL_START = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>`]+")
# An Authorization header as a log line or a message shows it.
_AUTH_HEADER = re.compile(r"((?:proxy-)?authorization\s*[:=]\s*)(?:(bearer|basic|token)\s+)?\S+",
                          re.IGNORECASE)


def is_secret_param(name: str) -> bool:
    """Whether a query parameter's name says its value is a credential."""
    norm = unquote_plus(name).strip().lower().replace("-", "_")
    return norm in SECRET_PARAMS or norm.endswith(SECRET_SUFFIXES)


def _params(text: str) -> list[tuple[str, str, str]]:
    """(raw piece, unquoted name, unquoted value) of each `&`-separated parameter, kept raw so
    the non-secret ones are written back byte for byte."""
    out = []
    for piece in text.split("&"):
        name, _, value = piece.partition("=")
        out.append((piece, unquote_plus(name), unquote_plus(value)))
    return out


def _masked(text: str) -> str:
    return "&".join(f"{raw.partition('=')[0]}={MASK}" if is_secret_param(name) else raw
                    for raw, name, _ in _params(text))


def _split(url: str) -> SplitResult | None:
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a port that is not a number
    except ValueError:
        return None
    return parts if parts.scheme and parts.netloc else None


def has_credentials(url: str) -> bool:
    """Whether the URL carries a userinfo or a secret query or fragment parameter."""
    parts = _split(url)
    if parts is None:
        return "://" in url and "@" in url
    return "@" in parts.netloc or any(is_secret_param(name) for part in (parts.query,
                                      parts.fragment) if part for _, name, _ in _params(part))


def redact_url(url: str) -> str:
    """The URL with its userinfo and its secret parameters' values replaced by `***`; a URL
    without credentials, or a text that is not a URL, comes back unchanged; one that cannot be
    parsed but may hold a userinfo, as a whole mask."""
    if not has_credentials(url):
        return url
    parts = _split(url)
    if parts is None:
        return MASK
    host = parts.netloc.rpartition("@")[2]
    netloc = f"{MASK}@{host}" if "@" in parts.netloc else host
    return urlunsplit((parts.scheme, netloc, parts.path, _masked(parts.query),
                       _masked(parts.fragment)))


@dataclass(frozen=True)
class UrlParts:
    """A URL taken apart for an HTTP client: the base it is sent to (no userinfo, query or
    fragment), the userinfo as basic-auth credentials, and the query's parameters, which the
    client adds to every request (a base URL's query would otherwise be glued to each route)."""

    base: str
    username: str | None
    password: str | None
    params: tuple[tuple[str, str], ...]

    @property
    def secrets(self) -> tuple[str, ...]:
        """The URL's credential values: its userinfo (a token is often given as the user
        name alone) and its secret parameters' values."""
        found = [v for v in (self.username, self.password) if v]
        return (*found, *(v for k, v in self.params if v and is_secret_param(k)))


def split_url(url: str) -> UrlParts:
    """The URL as UrlParts; a text that is not a URL is the base as it is."""
    parts = _split(url)
    if parts is None:
        return UrlParts(url, None, None, ())
    user, at, host = parts.netloc.rpartition("@")
    name, colon, password = user.partition(":")
    params = tuple((n, v) for raw, n, v in _params(parts.query) if raw) if parts.query else ()
    return UrlParts(urlunsplit((parts.scheme, host, parts.path, "", "")),
                    unquote(name) if at else None, unquote(password) if colon else None, params)


def redact_text(text: str, secrets: Iterable[str | None] = ()) -> str:
    """Free text (an error line, a server's message, one argument) with every URL in it
    redacted, Authorization headers' values masked, and each known secret value (at least
    MIN_SCRUBBED_LEN characters) replaced by `[redacted]`."""
    for value in sorted({s for s in secrets if s and len(s) >= MIN_SCRUBBED_LEN}, key=len,
                        reverse=True):
        text = text.replace(value, REDACTED)
    text = _URL_START.sub(lambda m: redact_url(m.group(0)), text)
    return _AUTH_HEADER.sub(lambda m: m.group(1) + (f"{m.group(2)} " if m.group(2) else "")
                            + MASK, text)


def redact_argv(argv: Sequence[str]) -> list[str]:
    """The command line as the manifest records it: an API key option's value `***`, and
    every URL in an argument redacted (`--judge-url http://***@host/v1`)."""
    out: list[str] = []
    for arg in argv:
        if out and out[-1] in SECRET_OPTIONS:
            out.append(MASK)
        elif arg.startswith(tuple(f"{o}=" for o in SECRET_OPTIONS)):
            out.append(arg.split("=", 1)[0] + "=" + MASK)
        else:
            out.append(redact_text(arg))
    return out


@dataclass(frozen=True)
class Scrubber:
    """The known secret values of one server (its key, its URL's password and secret
    parameters), replaced wherever a text or a reply's bytes carry them back."""

    values: tuple[str, ...] = ()

    @classmethod
    def of(cls, url: str, api_key: str | None) -> Scrubber:
        found = [api_key] if api_key else []
        found += split_url(url).secrets
        return cls(tuple(v for v in dict.fromkeys(found) if len(v) >= MIN_SCRUBBED_LEN))

    def text(self, text: str) -> str:
        return redact_text(text, self.values)

    def data(self, data: bytes) -> bytes:
        for value in sorted(self.values, key=len, reverse=True):
            data = data.replace(value.encode(), REDACTED.encode())
        return data


# RunSettings fields that hold a URL (a judge server, a Ray cluster's address).
URL_SETTINGS = ("judge_url", "cluster")


def redact_settings(dump: dict[str, Any]) -> dict[str, Any]:
    """A settings dump (RunSettings.model_dump, as the manifest records it) with its URLs
    redacted; the API key is never in a dump (the field is excluded)."""
    return {k: redact_url(v) if k in URL_SETTINGS and isinstance(v, str) else v
            for k, v in dump.items()}


class RedactingFilter(logging.Filter):
    """A logger's records with redact_text applied: httpx logs every request's URL at INFO,
    query (an `?api-key=`) included, wherever an application turns its logging on."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = redact_text(message)
        if clean != message:
            record.msg, record.args = clean, None
        return True


def redact_logger(name: str) -> None:
    """Put a RedactingFilter on the named logger, once."""
    logger = logging.getLogger(name)
    if not any(isinstance(f, RedactingFilter) for f in logger.filters):
        logger.addFilter(RedactingFilter())
