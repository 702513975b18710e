"""The HTTP client of the fetch stage and its parts: the client itself (``client``: single GETs,
every outcome a recorded status), the event loop it runs on (``io_loop``), the address guard
(``address_guard``), name resolution with its cache (``dns``), body decoding and the
content-type filter (``body``), and the parser of HTTP-dates (``dates``)."""
