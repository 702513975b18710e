"""``python -m job``: the command line of the crawler."""

from job.cli import main

raise SystemExit(main())
