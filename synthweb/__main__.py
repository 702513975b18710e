"""Run the synthetic web server in the foreground: ``python -m synthweb --port 0 --seed 1``.

Prints ``listening on http://HOST:PORT`` once bound; stops cleanly (flushing the request log)
on SIGTERM or SIGINT. ``--config-json`` gives a whole :class:`~synthweb.config.WebConfig`; the
other web options override single fields of it.
"""

from __future__ import annotations

import argparse
import dataclasses

from synthweb.config import WebConfig
from synthweb.server import run


def main(argv: list[str] | None = None) -> None:
    """Parse the command line and serve until stopped."""
    parser = argparse.ArgumentParser(prog="python -m synthweb", description=__doc__.splitlines()[0])
    parser.add_argument("--bind", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, default=0, help="port to listen on (0: any free)")
    parser.add_argument("--log", help="append the request log (JSON lines) to this file")
    parser.add_argument(
        "--flush-interval", type=float, default=0.5, help="seconds between request log flushes"
    )
    parser.add_argument("--config-json", help="a WebConfig as a JSON object")
    parser.add_argument("--seed", type=int)
    parser.add_argument("--hosts", type=int)
    parser.add_argument("--pages-per-host", type=int)
    parser.add_argument("--outlinks-per-page", type=int)
    parser.add_argument(
        "--url-policy",
        action="store_true",
        help="turn on the URL-policy profile (spellings, traps, link farm, popular pages)",
    )
    parser.add_argument(
        "--multi-domain",
        action="store_true",
        help="serve the multi-domain web (sites on many domains, link farms, endless spaces)",
    )
    args = parser.parse_args(argv)

    try:
        config = WebConfig.from_json(args.config_json) if args.config_json else WebConfig()
        overrides = {
            name: getattr(args, name)
            for name in ("seed", "hosts", "pages_per_host", "outlinks_per_page")
            if getattr(args, name) is not None
        }
        config = dataclasses.replace(config, **overrides)
        if args.url_policy:
            config = config.with_url_policy_profile()
        if args.multi_domain:
            config = config.with_multi_domain_profile()
    except ValueError as error:
        parser.error(str(error))
    run(
        config,
        host=args.bind,
        port=args.port,
        log_path=args.log,
        flush_interval=args.flush_interval,
    )


if __name__ == "__main__":
    main()
