"""Reading ``.npz`` archives, with one error for every way they fail.

Nothing is allocated from a file before the file has shown it can fill it:
every member's ``.npy`` header is read first, and a member whose header
declares more bytes than the member holds (or than the archive could hold),
or more than the process may allocate (:func:`~.buffers.check_allocation`,
all the members read together), is refused before any data is read.  A
caller that knows what it expects (shapes and dtypes, from its variables)
checks the headers too, before the data: an :class:`NpzArchive` reads the
headers on opening and the data on request.
"""

import os
import zipfile
import zlib

import numpy as np

from ..errors import InvalidArgumentError
from .buffers import check_allocation, nbytes

__all__ = ["NpzArchive", "read_npz"]

# what the reads of an archive and of its members raise on a bad file
# (an encrypted member: RuntimeError; an unknown compression:
# NotImplementedError)
_UNREADABLE = (OSError, EOFError, ValueError, zipfile.BadZipFile, zlib.error,
               NotImplementedError, RuntimeError)

_NPY_MAGIC = b"\x93NUMPY"
_ZIP_MAGIC = b"PK"
# The most a deflated stream expands: 258 bytes from 2 bits, 1032 to 1.
_DEFLATE_RATIO = 1032
# Bytes read at once while filling an array (an entry never costs twice its
# size in memory).
_CHUNK = 1 << 24


class NpzArchive:
    """An open ``.npz`` archive: its members' headers read and checked, their
    data read on request.

    Opening reads the zip directory and every member's ``.npy`` header, and
    refuses an archive with a member that is not a ``.npy`` array, holds
    objects (pickles), or declares more data than it holds.  Use it as a
    context manager (or call :meth:`close`).

    Parameters
    ----------
    path : str or os.PathLike or file-like
        A file object is read from its current position and left open.
    prefix : str
        Opens the message of every error, which goes on with `path` and why.

    Raises
    ------
    InvalidArgumentError
        ``"{prefix} {path!r}: {why}"`` if the file is missing, unreadable,
        empty, damaged, a single ``.npy`` array, or has a member as above.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> from sparsegrad.framework.archives import NpzArchive
    >>> path = os.path.join(tempfile.mkdtemp(), "two.npz")
    >>> np.savez(path, a=np.arange(3), b=np.zeros((2, 2)))
    >>> with NpzArchive(path, "cannot read") as archive:
    ...     print(archive.header("b"), archive.read("a")[0])
    ((2, 2), dtype('float64')) [0 1 2]
    """

    def __init__(self, path, prefix):
        self.path, self.prefix = path, prefix
        self._headers = {}
        self._own = isinstance(path, (str, bytes, os.PathLike))
        self._file = self._zip = None
        try:
            self._open()
        except InvalidArgumentError:
            self.close()
            raise
        except _UNREADABLE as exc:
            self.close()
            raise self.error(exc) from None

    def error(self, why):
        """The InvalidArgumentError ``"{prefix} {path!r}: {why}"``.

        Parameters
        ----------
        why : str or Exception

        Returns
        -------
        InvalidArgumentError
        """
        return InvalidArgumentError(f"{self.prefix} {self.path!r}: {why}")

    def _open(self):
        self._file = open(self.path, "rb") if self._own else self.path  # noqa: SIM115
        start = self._file.tell()
        head = self._file.read(len(_NPY_MAGIC))
        size = self._file.seek(0, os.SEEK_END) - start
        self._file.seek(start)
        if not head:
            raise self.error("the file is empty")
        if head == _NPY_MAGIC:
            raise self.error("it holds a single .npy array, not an .npz archive")
        if not head.startswith(_ZIP_MAGIC):
            raise self.error("it is not an .npz (zip) archive")
        self._zip = zipfile.ZipFile(self._file)
        for info in self._zip.infolist():
            name = info.filename[:-4] if info.filename.endswith(".npy") else None
            if name is None:
                raise self.error(f"member {info.filename!r} is not a .npy array")
            if name in self._headers:
                raise self.error(f"entry {name!r} appears twice")
            self._headers[name] = self._member_header(name, info, size)

    def _member_header(self, name, info, archive_size):
        """(shape, dtype, fortran_order, info, offset of the data) of a
        member, its header read and its declared size checked against what
        the member can hold."""
        if info.compress_size > archive_size or (
                info.compress_type == zipfile.ZIP_STORED
                and info.file_size != info.compress_size) or (
                info.compress_type == zipfile.ZIP_DEFLATED
                and info.file_size > _DEFLATE_RATIO * info.compress_size + 1024):
            raise self.error(
                f"entry {name!r} claims {info.file_size} bytes, more than the "
                f"file can hold ({archive_size} bytes in all)"
            )
        try:
            with self._zip.open(info) as member:
                version = np.lib.format.read_magic(member)
                if version == (1, 0):
                    header = np.lib.format.read_array_header_1_0(member)
                elif version == (2, 0):
                    header = np.lib.format.read_array_header_2_0(member)
                else:
                    raise ValueError(f".npy format version {version} is not read")
                offset = member.tell()
        except _UNREADABLE as exc:
            raise self.error(f"entry {name!r}: {exc}") from None
        shape, fortran_order, dtype = header
        if any(n < 0 for n in shape):
            raise self.error(f"entry {name!r} has the negative shape {shape}")
        if dtype.hasobject:
            raise self.error(
                f"entry {name!r} holds Python objects (dtype {dtype}); pickled "
                "arrays are not read"
            )
        declared = nbytes(shape, dtype)
        if declared > info.file_size - offset:
            raise self.error(
                f"entry {name!r} declares shape {shape} and dtype {dtype} "
                f"({declared} bytes) but holds {info.file_size - offset} bytes "
                "of data"
            )
        return shape, dtype, fortran_order, info, offset

    @property
    def names(self):
        """The names of the entries, in the archive's order (list of str)."""
        return list(self._headers)

    def header(self, name):
        """``(shape, dtype)`` that entry `name` (a str) declares, or None if
        the archive has no such entry."""
        entry = self._headers.get(name)
        return None if entry is None else entry[:2]

    def check(self, expect):
        """Check the headers of every entry with `expect`, reading no data.

        Parameters
        ----------
        expect : callable
            ``expect(name, shape, dtype)`` returns None for an entry it
            accepts, or a phrase saying what is wrong with it.

        Raises
        ------
        InvalidArgumentError
            ``"{prefix} {path!r}: entry {name!r} {why}"`` for the first entry
            `expect` refuses.
        """
        for name, (shape, dtype, *_) in self._headers.items():
            why = expect(name, shape, dtype)
            if why is not None:
                raise self.error(f"entry {name!r} {why}")

    def read(self, *names):
        """The arrays of entries `names`, read after one memory check of all
        of them together.

        Parameters
        ----------
        *names : str
            Entries of the archive.

        Returns
        -------
        list of ndarray
            One per name, in order.

        Raises
        ------
        InvalidArgumentError
            If an entry is missing or its data is damaged or short, or if the
            arrays together need more memory than the process may allocate
            (then before any is read).
        """
        for name in names:
            if name not in self._headers:
                raise self.error(f"it has no entry {name!r}")
        check_allocation(*(
            (self._headers[n][0], self._headers[n][1],
             f"{self.prefix} {self.path!r}: entry {n!r}") for n in names))
        arrays = []
        for name in names:
            try:
                arrays.append(self._read_one(name))
            except _UNREADABLE as exc:
                raise self.error(f"entry {name!r}: {exc}") from None
        return arrays

    def _read_one(self, name):
        shape, dtype, fortran_order, info, offset = self._headers[name]
        count = 1
        for n in shape:
            count *= n
        # np.ndarray, not np.empty: a zero-width string dtype stays one
        flat = np.ndarray((count,), dtype=dtype)
        with self._zip.open(info) as member:
            member.read(offset)   # the header, read and checked on opening
            target = flat.view(np.uint8) if flat.nbytes else flat
            done = 0
            while done < flat.nbytes:
                chunk = member.read(min(_CHUNK, flat.nbytes - done))
                if not chunk:
                    raise EOFError(
                        f"the data ends after {done} of {flat.nbytes} bytes"
                    )
                target[done:done + len(chunk)] = np.frombuffer(chunk, np.uint8)
                done += len(chunk)
        if fortran_order:
            return flat.reshape(shape[::-1]).transpose()
        return flat.reshape(shape)

    def read_all(self):
        """Every entry, as a dict of ndarrays (one memory check of all).

        Returns
        -------
        dict
        """
        names = self.names
        return dict(zip(names, self.read(*names)))

    def close(self):
        """Close the archive (and the file, where it was opened from a path).

        Returns
        -------
        None
        """
        if self._zip is not None:
            self._zip.close()
            self._zip = None
        if self._own and self._file is not None:
            self._file.close()
        self._file = None

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()


def read_npz(path, prefix, expect=None):
    """The arrays of the ``.npz`` archive at `path`, as a dict of ndarrays.

    Every member's header is read and checked before any data: pickled
    (object) arrays are refused, and so is a member that declares more data
    than it holds, and an archive whose arrays together need more memory
    than the process may allocate.

    Parameters
    ----------
    path : str or os.PathLike or file-like
    prefix : str
        Opens the message of the error, which goes on with `path` and why.
    expect : callable, optional
        ``expect(name, shape, dtype)``, called with every entry's header
        before any data is read: None accepts the entry, a phrase refuses it
        (``"has shape (3,); expected (4,)"``).

    Returns
    -------
    dict

    Raises
    ------
    InvalidArgumentError
        ``"{prefix} {path!r}: {why}"`` if the file is missing, unreadable,
        damaged, holds pickled arrays or a single ``.npy`` array, declares
        more than it holds or than memory allows, or `expect` refuses an
        entry (``entry 'x' has shape ...``).

    Examples
    --------
    >>> import io
    >>> import numpy as np
    >>> from sparsegrad.framework.archives import read_npz
    >>> buf = io.BytesIO()
    >>> np.savez(buf, a=np.arange(3))
    >>> _ = buf.seek(0)
    >>> read_npz(buf, "cannot read")["a"]
    array([0, 1, 2])
    """
    with NpzArchive(path, prefix) as archive:
        if expect is not None:
            archive.check(expect)
        return archive.read_all()
