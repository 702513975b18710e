"""What a running crawl listens on: the TCP sockets in LISTEN state of the crawl's process and
its descendants (the Flink JVM), read from ``/proc`` as ``ss -ltnp`` reads them.

:class:`ListeningWatch` is a watcher for ``run_crawl(..., watch=)``: it finds the crawl's
process in ``out/job.json`` (the launcher writes its pid there) and collects, at each call,
every listening socket of that process tree.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import os
from pathlib import Path

from tests.integration.crawl_runner import running_job

_LISTEN = "0A"  # the TCP state in /proc/net/tcp{,6}


@dataclasses.dataclass(frozen=True, order=True)
class Listener:
    """One listening TCP socket of a process."""

    pid: int
    process: str
    address: str
    port: int

    @property
    def loopback(self) -> bool:
        """Whether only this machine can connect (127.0.0.0/8, ::1, ::ffff:127.x.y.z)."""
        address = ipaddress.ip_address(self.address)
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        return address.is_loopback

    def __str__(self) -> str:
        return f"{self.process}[{self.pid}] {self.address}:{self.port}"


def process_tree(pid: int) -> list[int]:
    """``pid`` and its living descendants."""
    pids, index = [pid], 0
    while index < len(pids):
        task_dir = Path(f"/proc/{pids[index]}/task")
        index += 1
        try:
            tasks = list(task_dir.iterdir())
        except OSError:
            continue
        for task in tasks:
            try:
                children = (task / "children").read_text().split()
            except OSError:
                continue
            pids.extend(int(child) for child in children if int(child) not in pids)
    return pids


def _address(hex_address: str) -> str:
    """An address of /proc/net/tcp{,6}: 32-bit words in the host's (little-endian) order."""
    raw = bytes.fromhex(hex_address)
    words = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
    return str(ipaddress.ip_address(words))


def listeners(pid: int) -> set[Listener]:
    """The listening TCP sockets of process ``pid`` (empty once it is gone)."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
        name = Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return set()
    inodes = set()
    for fd in fds:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue  # closed meanwhile
        if target.startswith("socket:["):
            inodes.add(target[len("socket:["):-1])
    found = set()
    for table in ("tcp", "tcp6"):
        try:
            lines = Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state == _LISTEN and inode in inodes:
                address, port = local.split(":")
                found.add(Listener(pid, name, _address(address), int(port, 16)))
    return found


class ListeningWatch:
    """Collects the listening sockets of the crawl writing ``out`` while it runs."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.seen: set[Listener] = set()
        self.rest = ""

    def __call__(self) -> None:
        record = running_job(self.out)
        if record is None:
            return
        self.rest = record.get("rest", "")
        for pid in process_tree(int(record["pid"])):
            self.seen |= listeners(pid)
