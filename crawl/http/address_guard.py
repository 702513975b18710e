"""The address guard against server-side request forgery: which IP addresses a request may
reach.

The special-purpose ranges are IANA's registries for IPv4 and IPv6, and an IPv6 address that
embeds an IPv4 one (mapped, NAT64, 6to4) is judged by the address it reaches. The resolver
(:mod:`crawl.http.dns`) applies the guard to the answers of a name and the client
(:mod:`crawl.http.client`) to an IP-literal URL, at every redirect hop it follows.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable

from crawl.config import FetchSection

__all__ = [
    "ADDRESS_CLASSES",
    "AddressNotAllowed",
    "address_check_for",
    "address_class",
    "address_reason",
    "is_ip_literal",
]

_Network = ipaddress.IPv4Network | ipaddress.IPv6Network

# IANA's special-purpose address registries (RFC 6890 and successors), most specific first.
# "private": in use inside some network, not on the Internet; "reserved": documentation,
# benchmarking, protocol assignments and unallocated space.
_V4_CLASSES: tuple[tuple[_Network, str], ...] = tuple(
    (ipaddress.ip_network(network), name)
    for network, name in (
        ("0.0.0.0/32", "unspecified"),
        ("0.0.0.0/8", "reserved"),  # "this network"; Linux connects 0.x to itself
        ("10.0.0.0/8", "private"),
        ("100.64.0.0/10", "private"),  # shared address space (carrier-grade NAT)
        ("127.0.0.0/8", "loopback"),
        ("169.254.0.0/16", "link-local"),  # cloud metadata services live here
        ("172.16.0.0/12", "private"),
        ("192.0.0.0/24", "reserved"),  # IETF protocol assignments
        ("192.0.2.0/24", "reserved"),  # documentation
        ("192.88.99.0/24", "reserved"),  # 6to4 relay anycast (deprecated)
        ("192.168.0.0/16", "private"),
        ("198.18.0.0/15", "reserved"),  # benchmarking
        ("198.51.100.0/24", "reserved"),  # documentation
        ("203.0.113.0/24", "reserved"),  # documentation
        ("224.0.0.0/4", "multicast"),
        ("240.0.0.0/4", "reserved"),  # future use and the limited broadcast address
    )
)

# IPv6 prefixes that embed an IPv4 address: the embedded address decides.
_V6_EMBEDDING: tuple[_Network, ...] = (
    ipaddress.ip_network("::ffff:0:0/96"),  # IPv4-mapped
    ipaddress.ip_network("64:ff9b::/96"),  # NAT64 well-known prefix
)

_V6_CLASSES: tuple[tuple[_Network, str], ...] = tuple(
    (ipaddress.ip_network(network), name)
    for network, name in (
        ("::/128", "unspecified"),
        ("::1/128", "loopback"),
        ("64:ff9b:1::/48", "private"),  # local-use NAT64
        ("100::/64", "reserved"),  # discard-only
        ("2001::/23", "reserved"),  # IETF protocol assignments (Teredo, benchmarking, ...)
        ("2001:db8::/32", "reserved"),  # documentation
        ("3fff::/20", "reserved"),  # documentation
        ("fc00::/7", "private"),  # unique local
        ("fe80::/10", "link-local"),
        ("fec0::/10", "private"),  # site-local (deprecated)
        ("ff00::/8", "multicast"),
    )
)

_V6_GLOBAL_UNICAST = ipaddress.ip_network("2000::/3")

#: The classes :func:`address_class` returns besides None (public).
ADDRESS_CLASSES = ("loopback", "private", "link-local", "multicast", "reserved", "unspecified")


def _parse_address(address: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(address.strip().strip("[]"))
    except ValueError:
        return None


def address_class(address: str) -> str | None:
    """The special-purpose class of an IP address (one of :data:`ADDRESS_CLASSES`), or None
    for a public unicast address. Text that is no IP address counts as ``"reserved"``.

    IPv6 zone ids are ignored (``fe80::1%eth0`` is link-local); IPv4 addresses embedded in
    IPv6 (``::ffff:127.0.0.1``, ``64:ff9b::a00:1``, 6to4 ``2002:7f00:1::``) are classified as
    the IPv4 address they reach. IPv6 outside 2000::/3 (not allocated for unicast) is reserved.
    """
    ip = _parse_address(address)
    if ip is None:
        return "reserved"
    if isinstance(ip, ipaddress.IPv6Address):
        ip = ipaddress.IPv6Address(ip.packed)  # without the zone id
        if any(ip in network for network in _V6_EMBEDDING):
            return address_class(str(ipaddress.IPv4Address(ip.packed[-4:])))
        if ip.sixtofour is not None:
            return address_class(str(ip.sixtofour))
        for network, name in _V6_CLASSES:
            if ip in network:
                return name
        return None if ip in _V6_GLOBAL_UNICAST else "reserved"
    for network, name in _V4_CLASSES:
        if ip in network:
            return name
    return None


def address_reason(address: str) -> str | None:
    """The reason a request to ``address`` is refused (``ssrf:<class>-address``), or None."""
    kind = address_class(address)
    return None if kind is None else f"ssrf:{kind}-address"


class AddressNotAllowed(OSError):
    """A request would reach an address the guard refuses; ``reason`` says which kind.

    An :class:`OSError`, so that aiohttp reports it from the resolver as a connection error
    (``ClientConnectorError.os_error``) rather than as an internal failure.
    """

    def __init__(self, reason: str, host: str = "") -> None:
        super().__init__(f"{reason}: {host}" if host else reason)
        self.reason = reason
        self.host = host


def is_ip_literal(host: str) -> bool:
    """Whether ``host`` (a URL's host, IPv6 in brackets or not) is an IP address."""
    return _parse_address(host) is not None


def address_check_for(fetch: FetchSection) -> Callable[[str], str | None] | None:
    """The address guard the settings ask for: :func:`address_reason`, or None when private
    addresses are allowed (``fetch.allow_private_addresses``) or a proxy resolves and connects
    instead of us (``fetch.proxy``: the proxy is the user's choice, and the resolver only ever
    sees its name)."""
    if fetch.proxy or fetch.allow_private_addresses:
        return None
    return address_reason
