"""The address a request comes from, for login throttling (django-axes'
`AXES_CLIENT_IP_CALLABLE`).

`REMOTE_ADDR` is the peer of the TCP connection: behind a reverse proxy that is the proxy,
the same for every user. `X-Forwarded-For` names the client, but anyone can send that
header: it is read only when the peer is one of the proxies the operator configured
(`SPECADMIN_TRUSTED_PROXIES`, docs/operations.md "Behind a reverse proxy"), and then from
the right, skipping trusted proxies, so a value the client put in front of the proxy's own
entry is never taken (MDN, "X-Forwarded-For: Selecting an IP address"). django-ipware's
trusted-proxy setting checks the header's entries, not the peer, which is why this is not
left to it.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from django.conf import settings
from django.http import HttpRequest

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def parse_networks(entries: Iterable[str]) -> list[Network]:
    """Addresses or CIDR networks ("127.0.0.1", "10.0.0.0/8", "::1"); ValueError names a
    bad one."""
    networks = []
    for entry in entries:
        entry = entry.strip()
        if not entry:
            continue
        try:
            networks.append(ipaddress.ip_network(entry, strict=False))
        except ValueError:
            raise ValueError(
                f"SPECADMIN_TRUSTED_PROXIES: {entry!r} is not an IP address or network"
            ) from None
    return networks


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text.strip())
    except ValueError:
        return None


def _trusted(address: str, proxies: list[Network]) -> bool:
    parsed = _address(address)
    return parsed is not None and any(parsed in network for network in proxies)


def client_address(request: HttpRequest) -> str:
    """The client's address: the peer, or, when the peer is a trusted proxy, the last
    entry of X-Forwarded-For that is not a trusted proxy itself."""
    peer = request.META.get("REMOTE_ADDR", "") or ""
    proxies = parse_networks(getattr(settings, "SPECADMIN_TRUSTED_PROXIES", []))
    if not proxies or not _trusted(peer, proxies):
        return peer
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
    for entry in reversed(forwarded.split(",")):
        if _trusted(entry, proxies):
            continue
        return entry.strip() if _address(entry) is not None else peer
    return peer


__all__ = ["client_address", "parse_networks"]
