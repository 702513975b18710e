"""The HTTP client of the fetch stage: aiohttp on a background event loop, with timeouts, the
private-address guard, a DNS cache and body decoding with size and ratio limits
(``fetcher``)."""
