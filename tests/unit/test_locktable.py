"""Reading the system's table of locks (``/proc/locks``) as the kernel writes it, and what a
restore may conclude from it: a view that cannot be whole (a container's ``/proc``, a lock
on the same inode through another device number, a line not in the kernel's format) is
never taken for "no lock that keeps the file open"."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from philont.backup import kept_open_by_locks
from philont.locktable import FileLocks, TableLock, locks_of, mount_device, parse

SAMPLE = """\
1: POSIX  ADVISORY  WRITE 4121 fe:00:2150975 1073741826 1073742335
1: -> POSIX  ADVISORY  WRITE 4377 fe:00:2150975 1073741826 1073742335
2: OFDLCK ADVISORY  READ  -1 00:2d:6581 128 EOF
3: FLOCK  ADVISORY  WRITE 4121 fe:00:2150976 0 EOF
4: LEASE  ACTIVE    READ  4121 fe:00:2150977 0 EOF
5: POSIX  ADVISORY  READ  88 <none>:0 0 EOF
"""


def test_the_kernels_lines_are_read_waiters_left_out() -> None:
    assert parse(SAMPLE) == [
        TableLock("POSIX", "WRITE", 4121, (0xFE, 0), 2150975, 1073741826, 1073742335),
        TableLock("OFDLCK", "READ", -1, (0, 0x2D), 6581, 128, None),
        TableLock("FLOCK", "WRITE", 4121, (0xFE, 0), 2150976, 0, None),
        TableLock("LEASE", "READ", 4121, (0xFE, 0), 2150977, 0, None),
        TableLock("POSIX", "READ", 88, None, 0, 0, None),
    ]
    assert parse("") == []


def test_a_line_not_in_the_kernels_format_makes_the_whole_table_unknown() -> None:
    for bad in ("1: POSIX ADVISORY WRITE 12 fe:00 0 EOF", "garbage", "1: POSIX x y z zz:00:1 0 1"):
        assert parse(SAMPLE + bad + "\n") is None


_KINDS = ("POSIX", "OFDLCK", "FLOCK", "LEASE", "DELEG")
_table_locks = st.builds(
    TableLock,
    kind=st.sampled_from(_KINDS),
    access=st.sampled_from(("READ", "WRITE", "UNLCK")),
    pid=st.integers(-1, 2**22),
    device=st.none() | st.tuples(st.integers(0, 4095), st.integers(0, 2**20 - 1)),
    inode=st.integers(0, 2**64 - 1),
    start=st.integers(0, 2**63 - 1),
    end=st.none() | st.integers(0, 2**63 - 2),
)


def _line(n: int, lock: TableLock, waiting: bool) -> str:
    """``lock`` as ``fs/locks.c`` (``lock_get_status``) writes it."""
    mode = {"POSIX": "ADVISORY ", "OFDLCK": "ADVISORY ", "FLOCK": " ADVISORY  "}
    head = {"POSIX": "POSIX ", "OFDLCK": "OFDLCK", "FLOCK": "FLOCK "}
    if lock.kind in head:
        kind = f"{head[lock.kind]} {mode[lock.kind]}"
    else:
        kind = f"{lock.kind}  ACTIVE    "
    if lock.device is None:
        name = f"<none>:{lock.inode}"
    else:
        name = f"{lock.device[0]:02x}:{lock.device[1]:02x}:{lock.inode}"
    end = "EOF" if lock.end is None else str(lock.end)
    arrow = " -> " if waiting else ""
    return f"{n}: {arrow}{kind}{lock.access} {lock.pid} {name} {lock.start} {end}"


@given(
    st.lists(st.tuples(_table_locks, st.booleans()), max_size=12),
)
def test_every_lock_written_as_the_kernel_writes_it_is_read_back(
    locks: list[tuple[TableLock, bool]],
) -> None:
    """Generated locks, some waited for, written as the kernel writes them (device in hex,
    inode in decimal): those held are read back, exactly."""
    text = "\n".join(_line(n, lock, waiting) for n, (lock, waiting) in enumerate(locks, 1))
    assert parse(text + "\n") == [lock for lock, waiting in locks if not waiting]


@given(st.text())
def test_any_text_is_read_or_refused_never_an_exception(text: str) -> None:
    result = parse(text)
    assert result is None or isinstance(result, list)


HERE = (0xFE, 0)
SUBVOLUME = (0, 0x2D)  # what stat says of a file in a btrfs subvolume; the table says HERE


def _lock(device: tuple[int, int] | None, inode: int, kind: str = "POSIX") -> TableLock:
    return TableLock(kind, "WRITE", 7, device, inode, 1073741826, 1073742335)


def test_a_lock_is_matched_by_any_device_the_file_is_known_by() -> None:
    table = [_lock(HERE, 42)]
    for devices in ({HERE}, {SUBVOLUME, HERE}):
        found = locks_of(table, devices, 42, every_process=True)
        assert found == FileLocks(held=(table[0],), whole=True)


def test_a_lock_on_the_same_inode_through_another_device_makes_the_view_not_whole() -> None:
    found = locks_of([_lock(HERE, 42), _lock(None, 42)], {SUBVOLUME}, 42, every_process=True)
    assert found == FileLocks(held=(), whole=False)
    other_inode = locks_of([_lock(HERE, 43)], {SUBVOLUME}, 42, every_process=True)
    assert other_inode == FileLocks(held=(), whole=True)
    flock = locks_of([_lock(HERE, 42, "FLOCK")], {SUBVOLUME}, 42, every_process=True)
    assert flock.whole  # not a byte-range lock: none of SQLite's


def test_a_table_not_read_or_of_a_container_is_not_whole() -> None:
    assert not locks_of(None, {HERE}, 42, every_process=True).whole
    assert not locks_of([_lock(HERE, 42)], {HERE}, 42, every_process=False).whole


def test_the_mount_device_is_read_in_decimal_from_mountinfo() -> None:
    fdinfo = "pos:\t0\nflags:\t012000000\nmnt_id:\t47\nino:\t2162720\n"
    mountinfo = (
        "27 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n"
        "47 27 0:45 /@home /home rw,relatime - btrfs /dev/vdb rw,subvol=/@home\n"
    )
    assert mount_device(fdinfo, mountinfo) == (0, 45)
    assert mount_device("pos:\t0\n", mountinfo) is None
    assert mount_device(fdinfo, "27 1 254:0 / / rw - ext4 /dev/vda rw\n") is None


def _range(access: str, start: int, end: int | None) -> TableLock:
    return TableLock("POSIX", access, 7, HERE, 42, start, end)


_SHARED = _range("READ", 1073741826, 1073742335)
_EXCLUSIVE = _range("WRITE", 1073741826, 1073742335)
_SHM = _range("READ", 128, 128)
_ranges = st.sampled_from(
    [_SHARED, _EXCLUSIVE, _range("WRITE", 1073741824, 1073741824), _SHM, _range("WRITE", 0, None)]
)
_views = st.builds(FileLocks, held=st.lists(_ranges, max_size=3).map(tuple), whole=st.booleans())


@given(_views, _views, st.booleans())
def test_a_view_not_whole_never_says_the_lock_ends_by_itself(
    db: FileLocks, shm: FileLocks, wal: bool
) -> None:
    """'Ends by itself' makes a restore wait instead of refusing; 'kept open' stands on the
    locks seen. Where a lock may not be listed, only 'kept open' or 'cannot tell'."""
    told = kept_open_by_locks(db, shm, wal=wal)
    if not (db.whole and shm.whole):
        assert told is not False
    if not db.held:
        assert told is None


def test_what_whole_views_say() -> None:
    def told(db: tuple[TableLock, ...], shm: tuple[TableLock, ...], wal: bool) -> bool | None:
        return kept_open_by_locks(FileLocks(db, True), FileLocks(shm, True), wal=wal)

    assert told((_SHARED,), (_SHM,), True) is True  # WAL readers, open
    assert told((_EXCLUSIVE,), (_SHM,), True) is False  # the last one closing
    assert told((_EXCLUSIVE,), (), True) is True  # locking_mode EXCLUSIVE in WAL mode
    assert told((_EXCLUSIVE,), (), False) is False  # a commit in rollback-journal mode
    assert told((_range("WRITE", 0, None),), (), True) is True  # to the end of the file (EOF)
    assert told((), (), True) is None
