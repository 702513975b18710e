"""The address guard (crawl.http.address_guard): how IP addresses are classified, the reason a
refused one gets, and when the settings turn the guard on."""

from __future__ import annotations

import pytest

from crawl.config import FetchSection
from crawl.http.address_guard import (
    ADDRESS_CLASSES,
    address_check_for,
    address_class,
    address_reason,
)

ADDRESSES = [
    # IPv4: public
    ("8.8.8.8", None),
    ("93.184.215.14", None),
    ("1.1.1.1", None),
    ("100.63.255.255", None),  # just below the shared address space
    ("100.128.0.0", None),  # just above it
    ("172.15.255.255", None),
    ("172.32.0.0", None),
    ("192.0.1.1", None),
    ("192.169.0.1", None),
    ("198.20.0.1", None),
    ("223.255.255.255", None),
    # IPv4: special
    ("0.0.0.0", "unspecified"),
    ("0.1.2.3", "reserved"),
    ("10.0.0.1", "private"),
    ("10.255.255.255", "private"),
    ("100.64.0.1", "private"),
    ("127.0.0.1", "loopback"),
    ("127.255.255.254", "loopback"),
    ("169.254.169.254", "link-local"),
    ("172.16.0.1", "private"),
    ("172.31.255.255", "private"),
    ("192.0.0.8", "reserved"),
    ("192.0.2.1", "reserved"),
    ("192.88.99.1", "reserved"),
    ("192.168.1.1", "private"),
    ("198.18.0.1", "reserved"),
    ("198.19.255.255", "reserved"),
    ("198.51.100.7", "reserved"),
    ("203.0.113.9", "reserved"),
    ("224.0.0.1", "multicast"),
    ("239.255.255.250", "multicast"),
    ("240.0.0.1", "reserved"),
    ("255.255.255.255", "reserved"),
    # IPv6: public
    ("2606:4700:4700::1111", None),
    ("2a00:1450:4001:81c::200e", None),
    ("2001:4860:4860::8888", None),
    # IPv6: special
    ("::", "unspecified"),
    ("::1", "loopback"),
    ("[::1]", "loopback"),
    ("fe80::1", "link-local"),
    ("fe80::1%eth0", "link-local"),
    ("febf:ffff::1", "link-local"),
    ("fc00::1", "private"),
    ("fd12:3456:789a::1", "private"),
    ("fec0::1", "private"),
    ("ff02::1", "multicast"),
    ("ff0e::1", "multicast"),
    ("2001:db8::1", "reserved"),
    ("2001::1", "reserved"),  # Teredo
    ("2001:2::1", "reserved"),  # benchmarking
    ("3fff::1", "reserved"),
    ("100::1", "reserved"),
    ("64:ff9b:1::1", "private"),
    ("::2", "reserved"),
    ("4000::1", "reserved"),  # outside 2000::/3
    ("5f00::1", "reserved"),
    # IPv4 inside IPv6: the IPv4 address decides
    ("::ffff:127.0.0.1", "loopback"),
    ("::ffff:7f00:1", "loopback"),
    ("::ffff:10.1.2.3", "private"),
    ("::ffff:169.254.169.254", "link-local"),
    ("::ffff:0.0.0.0", "unspecified"),
    ("::ffff:8.8.8.8", None),
    ("64:ff9b::127.0.0.1", "loopback"),
    ("64:ff9b::8.8.8.8", None),
    ("2002:7f00:1::", "loopback"),  # 6to4 of 127.0.0.1
    ("2002:c0a8:101::1", "private"),  # 6to4 of 192.168.1.1
    ("2002:808:808::1", None),  # 6to4 of 8.8.8.8
    ("::127.0.0.1", "reserved"),  # IPv4-compatible (deprecated)
    # not an address at all
    ("example.org", "reserved"),
    ("", "reserved"),
]


@pytest.mark.parametrize(("address", "expected"), ADDRESSES)
def test_address_class(address: str, expected: str | None) -> None:
    assert address_class(address) == expected


def test_every_class_is_in_the_table() -> None:
    assert {expected for _, expected in ADDRESSES} - {None} == set(ADDRESS_CLASSES)


def test_address_reason_names_the_class() -> None:
    assert address_reason("10.0.0.1") == "ssrf:private-address"
    assert address_reason("::1") == "ssrf:loopback-address"
    assert address_reason("169.254.169.254") == "ssrf:link-local-address"
    assert address_reason("8.8.8.8") is None


@pytest.mark.parametrize(
    ("settings", "guarded"),
    [
        ({}, True),
        ({"allow_private_addresses": True}, False),
        ({"proxy": "http://127.0.0.1:3128"}, False),
        ({"proxy": "http://127.0.0.1:3128", "allow_private_addresses": True}, False),
    ],
)
def test_the_guard_applies_without_proxy_unless_allowed(settings: dict, guarded: bool) -> None:
    check = address_check_for(FetchSection(**settings))
    assert (check is address_reason) is guarded
    assert (check is None) is not guarded
