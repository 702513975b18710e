"""Make the upgrade test's fixture: a crawl begun by an earlier version of the crawler.

``python tests/integration/make_old_crawl.py CHECKOUT`` crawls the replay test's synthetic web
(:data:`WEB`, served by this checkout's ``synthweb``) with the crawler of ``CHECKOUT`` (a
``git worktree`` of an earlier commit), stopped by a page budget with a savepoint, and packs its
output directory and the web's request log into ``tests/integration/data/old-crawl.tar.gz``
with the commit's id. The checkpoints (the savepoint holds the state), Flink's configuration
and logs and ``job.json`` are left out.

``test_replay.py`` resumes that crawl with this version, finishes it and replays the whole
archive in pywb: what a user upgrading a running crawl does.
"""

from __future__ import annotations

import argparse
import io
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from synthweb import SyntheticWebServer, WebConfig  # noqa: E402

WEB = WebConfig(seed=5, hosts=4, pages_per_host=5)
#: The settings of the test's crawl: the old run's and the resumed run's.
CRAWL_OPTIONS = ("--delay", "0.05", "--idle-seconds", "6",
                 "--set", "politeness.backoff_base_seconds=0.5")
OLD_PAGES = 10
OLD_PARALLELISM = 2
FIXTURE = ROOT / "tests" / "integration" / "data" / "old-crawl.tar.gz"
_LEFT_OUT = {"checkpoints", "flink-conf", "job.json", "flink"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkout", type=Path, help="a checkout of the earlier version")
    args = parser.parse_args()
    commit = subprocess.run(["git", "-C", str(args.checkout), "rev-parse", "HEAD"],
                            capture_output=True, text=True, check=True).stdout.strip()
    with tempfile.TemporaryDirectory() as work_name:
        work = Path(work_name)
        with SyntheticWebServer(WEB, work / "requests.jsonl") as server:
            seeds = work / "seeds.txt"
            seeds.write_text("\n".join(server.web.seeds()) + "\n", encoding="utf-8")
            crawl = subprocess.run(
                [sys.executable, "-m", "job", "crawl", "--seeds", str(seeds),
                 "--out", str(work / "out"), "--proxy", server.proxy_url,
                 "--max-pages", str(OLD_PAGES), "--parallelism", str(OLD_PARALLELISM),
                 *CRAWL_OPTIONS],
                cwd=args.checkout, capture_output=True, text=True, timeout=600)
            if crawl.returncode != 0:
                raise SystemExit(f"the old crawl failed:\n{crawl.stdout}{crawl.stderr}")
            server.flush_log()
        FIXTURE.parent.mkdir(parents=True, exist_ok=True)
        with tarfile.open(FIXTURE, "w:gz") as archive:
            archive.add(work / "out", "out",
                        filter=lambda info: None if Path(info.name).name in _LEFT_OUT else info)
            archive.add(work / "requests.jsonl", "requests.jsonl")
            data = f"{commit}\n".encode()
            info = tarfile.TarInfo("commit")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    print(f"{FIXTURE}: {FIXTURE.stat().st_size} bytes, a crawl by {commit}")


if __name__ == "__main__":
    main()
