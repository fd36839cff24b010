"""The system's table of file locks (Linux ``/proc/locks``), read without opening the files
it is asked about: which locks are held on a file, and whether what was read can be the
whole of it. A restore tells from it, at once, a file other connections keep open from one
locked for a moment (:func:`philont.backup._kept_open`).

What the table cannot show is said, never taken for "no lock":

- it lists only the locks of processes in the PID namespace of the ``/proc`` read (a
  container does not see the host's, nor another container's, processes' locks);
- it names a file by its superblock's device and its inode number (``%02x:%02x:%lu``, the
  device in hex, the inode in decimal), which is not always ``stat``'s ``st_dev``: a btrfs
  subvolume's files report the subvolume's own device to ``stat``; the device of the mount
  (``/proc/self/mountinfo``, in decimal there) is the superblock's;
- a line for the same inode number on another device may be the file seen through a
  device number not known here (another way a file system reports it), or another file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "KERNEL_FILESYSTEMS",
    "PROC_LOCKS",
    "FileLocks",
    "TableLock",
    "file_locks",
    "locks_of",
    "mount_device",
    "mount_type",
    "parse",
    "sees_every_process",
]

PROC_LOCKS = Path("/proc/locks")

Device = tuple[int, int]
"""``(major, minor)``."""

_INIT_PID_NS_INODE = 0xEFFFFFFC
"""``PROC_PID_INIT_INO``: the inode of ``/proc/<pid>/ns/pid`` of the initial PID namespace
(fixed by the kernel, ``include/linux/proc_ns.h``)."""

_RANGED = ("POSIX", "OFDLCK")
"""Locks on a range of bytes (``fcntl``): SQLite's. ``FLOCK``, ``LEASE``, ``DELEG`` lines
carry ``0 EOF`` and never concern SQLite's locks."""


@dataclass(frozen=True)
class TableLock:
    """One lock held (not waited for) as the table lists it."""

    kind: str  # POSIX, OFDLCK, FLOCK, LEASE, DELEG, ACCESS, UNKNOWN
    access: str  # READ, WRITE, UNLCK
    pid: int  # -1 for an OFD lock
    device: Device | None  # None: the kernel printed "<none>" (no inode)
    inode: int
    start: int
    end: int | None  # None: to the end of the file ("EOF")


def parse(text: str) -> list[TableLock] | None:
    """The locks held that ``text`` (``/proc/locks``) lists; the lines of locks waited for
    (``-> ...``) are not held and left out. None when a line is not in the kernel's format:
    then no line can be trusted to say all there is."""
    found = []
    for line in text.splitlines():
        fields = line.split()
        if not fields:
            continue
        if len(fields) > 1 and fields[1] == "->":
            continue  # waiting for a lock, not holding one
        lock = _parse_line(fields)
        if lock is None:
            return None
        found.append(lock)
    return found


def _parse_line(fields: list[str]) -> TableLock | None:
    # "1: POSIX  ADVISORY  WRITE 1234 fe:00:56789 1073741826 1073742335"
    if len(fields) != 8 or not fields[0].endswith(":") or not fields[0][:-1].isdigit():
        return None
    _, kind, _mode, access, pid, name, start, end = fields
    try:
        if name.startswith("<none>:"):
            device, inode = None, int(name.split(":")[1])
        else:
            major, minor, ino = name.split(":")
            device, inode = (int(major, 16), int(minor, 16)), int(ino)
        return TableLock(
            kind=kind,
            access=access,
            pid=int(pid),
            device=device,
            inode=inode,
            start=int(start),
            end=None if end == "EOF" else int(end),
        )
    except ValueError:
        return None


@dataclass(frozen=True)
class FileLocks:
    """The byte-range locks held on one file (``POSIX``, ``OFDLCK``), and whether they are
    all there are (``whole``): when not, a lock not listed may be held."""

    held: tuple[TableLock, ...]
    whole: bool


NOT_KNOWN = FileLocks(held=(), whole=False)
_MISSING = FileLocks(held=(), whole=True)


def locks_of(
    locks: list[TableLock] | None, devices: set[Device], inode: int, *, every_process: bool
) -> FileLocks:
    """The byte-range locks of ``locks`` (:func:`parse`) on the file ``inode`` of one of
    ``devices`` (the ways its device may be printed). Not whole when the table could not be
    read (None), when it does not list every process's locks, or when a lock on the same
    inode number is on a device not in ``devices`` (this file seen another way, maybe)."""
    if locks is None:
        return NOT_KNOWN
    held = []
    whole = every_process
    for lock in locks:
        if lock.inode != inode or lock.kind not in _RANGED:
            continue
        if lock.device in devices:
            held.append(lock)
        else:
            whole = False
    return FileLocks(held=tuple(held), whole=whole)


def mount_device(fdinfo: str, mountinfo: str) -> Device | None:
    """The device of the mount a file is on, as ``/proc/locks`` prints a lock's (the
    superblock's): ``mnt_id`` from the file's ``/proc/self/fdinfo/<fd>``, its line in
    ``/proc/self/mountinfo`` (``<id> <parent> <major>:<minor> ...``, decimal). None when
    either does not say."""
    mnt_id = next(
        (
            line.split(":", 1)[1].strip()
            for line in fdinfo.splitlines()
            if line.startswith("mnt_id:")
        ),
        None,
    )
    if mnt_id is None:
        return None
    for line in mountinfo.splitlines():
        fields = line.split()
        if len(fields) > 2 and fields[0] == mnt_id:
            major, _, minor = fields[2].partition(":")
            if major.isdigit() and minor.isdigit():
                return (int(major), int(minor))
            return None
    return None


KERNEL_FILESYSTEMS = frozenset(
    {
        "proc", "sysfs", "cgroup", "cgroup2", "debugfs", "tracefs", "securityfs", "configfs",
        "pstore", "bpf", "efivarfs", "fusectl", "binfmt_misc", "mqueue", "nsfs", "devpts",
        "hugetlbfs",
    }
)  # fmt: skip
"""Filesystems whose files the kernel makes up (their size says nothing of what they read,
writes set kernel values): no file of them can hold a database."""


def mount_type(device: int, mountinfo: str | None = None) -> str | None:
    """The filesystem type (``proc``, ``ext4``, ...) of the mount of ``device`` (a file's
    ``st_dev``), from ``/proc/self/mountinfo`` (``<id> <parent> <major>:<minor> ... - <type>
    ...``; read when not given); None where it does not say (no such file: not Linux)."""
    text = _read(Path("/proc/self/mountinfo")) if mountinfo is None else mountinfo
    wanted = f"{os.major(device)}:{os.minor(device)}"
    for line in (text or "").splitlines():
        fields = line.split()
        if len(fields) > 2 and fields[2] == wanted and "-" in fields[3:]:
            after = fields.index("-", 3) + 1
            return fields[after] if after < len(fields) else None
    return None


def sees_every_process() -> bool:
    """Whether ``/proc`` lists every process's locks: this process is in the initial PID
    namespace and ``/proc`` shows it (``/proc/self`` is there), so ``/proc`` is that
    namespace's. A container's ``/proc`` (or any doubt) says no."""
    try:
        return os.stat("/proc/self/ns/pid").st_ino == _INIT_PID_NS_INODE
    except OSError:
        return False


def file_locks(*paths: Path) -> tuple[FileLocks, ...]:
    """The byte-range locks any process holds on each of ``paths`` (none, wholly known, on
    one that is missing), all from one reading of the table (and of the mounts and the PID
    namespace): files judged together are seen at one moment. Nothing of ``paths`` is opened
    but as a path (``O_PATH``, whose closing drops none of this process's locks on it)."""
    mountinfo = _read(Path("/proc/self/mountinfo")) or ""  # unread: no mount known
    files = [_file(path, mountinfo) for path in paths]
    text = _read(PROC_LOCKS)
    locks = None if text is None else parse(text)
    every_process = sees_every_process()
    return tuple(
        found
        if isinstance(found, FileLocks)
        else locks_of(locks, *found, every_process=every_process)
        for found in files
    )


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def _file(path: Path, mountinfo: str) -> tuple[set[Device], int] | FileLocks:
    """The devices ``path`` may be printed with in the table and its inode; or what is known
    of its locks already (a missing file holds none; one that cannot be looked at: unknown)."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return _MISSING
    except OSError:
        return NOT_KNOWN
    devices = {(os.major(st.st_dev), os.minor(st.st_dev))}
    mounted = _mount_device_of(path, mountinfo)
    if mounted is not None:
        devices.add(mounted)
    return devices, st.st_ino


def _mount_device_of(path: Path, mountinfo: str) -> Device | None:
    o_path = getattr(os, "O_PATH", None)
    if o_path is None:
        return None
    try:
        fd = os.open(path, o_path)
        try:
            fdinfo = Path(f"/proc/self/fdinfo/{fd}").read_text()
        finally:
            os.close(fd)
    except OSError:
        return None
    return mount_device(fdinfo, mountinfo)
