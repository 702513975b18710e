"""Helpers of the synthetic web's tests: a fingerprint of everything a web serves, and a small
plain web with the fingerprint it has had since before the profiles existed."""

from __future__ import annotations

import hashlib
import json

from synthweb import SyntheticWeb, WebConfig

__all__ = ["SMALL", "SMALL_DIGEST", "web_digest"]

SMALL = WebConfig(seed=7, hosts=12, pages_per_host=8, crawl_delays=(0.1,))
#: web_digest of SyntheticWeb(SMALL) as the web was before the profiles existed: with them off
#: the web must stay byte for byte the same (a change elsewhere in the web changes it too).
SMALL_DIGEST = "89b1343d9e4aeece9d53f27f91ab0f5796c118dc2615e616c4e5626f61b3f488"


def web_digest(web: SyntheticWeb) -> str:
    """A fingerprint of everything the web serves and of its ground truth."""
    sha = hashlib.sha256()
    for host in web.host_names():
        sha.update(web.robots_rules(host).body)
        for page in web.pages(host):
            sha.update(repr(page).encode())
            sha.update(web.body(page.url))
    expected = web.expected_crawl(web.seeds())
    truth = [expected.fetch, sorted(expected.never), expected.robots, expected.redirects]
    sha.update(json.dumps(truth).encode())
    return sha.hexdigest()
