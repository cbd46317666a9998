"""Whether a model server is on this machine (SPEC §9: a non-loopback server needs an explicit
``allow_remote``, since the memory then leaves the machine; issue 31 item 2).

Decided from the URL's spelling alone, before any connection and without a DNS lookup: the
host must be ``localhost`` (or a ``*.localhost`` name), an address in ``127.0.0.0/8`` or
``::1``. Any other name counts as remote, even one that would resolve to this machine.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"})


def host_of(base_url: str) -> str:
    try:
        return (urlsplit(base_url).hostname or "").lower()
    except ValueError:
        return ""


def is_loopback(base_url: str) -> bool:
    host = host_of(base_url)
    if host in LOOPBACK_NAMES or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_base_url(base_url: str | None, allow_remote: bool = False) -> str | None:
    """None when Eva may talk to this server; else one sentence saying why not (no I/O)."""
    if not base_url:
        return (
            "[llm] base_url is not set: the openai backend needs the server's address "
            "(e.g. http://127.0.0.1:11434/v1 for Ollama)"
        )
    try:
        parts = urlsplit(base_url)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError as e:
        return f"[llm] base_url {base_url!r} is not a URL ({e})"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"[llm] base_url {base_url!r} must be an http:// or https:// URL with a host"
    if not is_loopback(base_url) and not allow_remote:
        return (
            f"[llm] base_url {base_url} is not on this machine and the memory would leave "
            "it: set [llm] allow_remote = true to allow that"
        )
    return None
