"""An index URL's credentials: how private indexes are given to uv and pip (`https://__token__:TOKEN@host/simple`,
also through PIP_INDEX_URL). The harness asks the index without them in the URL (an Authorization header
instead) and never prints or records them: every URL it shows or writes goes through `redacted`."""

from __future__ import annotations

from urllib.parse import unquote, urlsplit, urlunsplit

HIDDEN = "***"


def split_credentials(url: str) -> tuple[str, tuple[str, str] | None]:
    """`url` without its user and password, and those (percent-decoded) when it had any."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url, None
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=host)), (unquote(parts.username or ""), unquote(parts.password or ""))


def redacted(url: str) -> str:
    """`url` as the harness prints and records it: a password (or a token given as the user name alone,
    as some indexes take it) replaced by ***, the user name kept where a password follows it."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.netloc.rpartition("@")[2]
    who = f"{parts.username}:{HIDDEN}" if parts.password is not None else HIDDEN
    return urlunsplit(parts._replace(netloc=f"{who}@{host}"))


def redacted_text(text: str, urls: tuple[str | None, ...]) -> str:
    """`text` (an error's message, which may quote a URL) with each of `urls` given redacted."""
    for url in urls:
        if url and url != redacted(url):
            text = text.replace(url, redacted(url))
            _, credentials = split_credentials(url)
            user, password = credentials or ("", "")
            secret = password or user  # what redacted() hides
            if secret:
                text = text.replace(secret, HIDDEN)
    return text
