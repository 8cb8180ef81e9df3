"""Reading ``.npz`` archives, with one error for every way they fail.

Nothing is allocated from a file before the file has shown it can fill it:
every member's ``.npy`` header is read first, and a member whose header
declares more bytes than the member holds (or than the archive could hold),
or more than the process may allocate (:func:`~.buffers.check_allocation`,
all the members read together), is refused before any data is read.  A
caller that knows what it expects (shapes and dtypes, from its variables)
checks the headers too, before the data: an :class:`NpzArchive` reads the
headers on opening and the data on request.

Half-precision arrays.  NumPy's ``.npy`` format has no name for bfloat16
(``ml_dtypes.bfloat16``): ``np.savez`` writes it as anonymous 2-byte records
(``|V2``) and the type is lost.  :func:`write_npz` therefore stores every
half-precision array (float16 and bfloat16, :data:`~.dtypes.HALF_DTYPES`) as
its bits, a ``uint16`` entry of the same name and shape, and adds one entry,
``__dtypes__`` (:data:`DTYPES_ENTRY`): a 0-d string array holding the JSON
object ``{entry name: dtype name}`` of those entries (``{"slot/0/m":
"bfloat16"}``).  An archive without half arrays has no ``__dtypes__`` and is
the plain ``.npz`` it always was.

:class:`NpzArchive` decodes on opening: the entries that ``__dtypes__``
names report their half dtype (:meth:`NpzArchive.header`, `expect`) and read
as it, bit for bit (NaN payloads, signed zeros, denormals); ``__dtypes__``
itself is no entry of the archive.  Refused, with the entry and the dtypes
named: a ``__dtypes__`` that is not a 0-d string of a JSON object of strings,
a dtype name other than ``"float16"`` and ``"bfloat16"``, a name without its
entry, bits whose stored dtype is not ``uint16``, and an entry of anonymous
records (``|V2``: bfloat16 as ``np.savez`` writes it, without its name).  A
stored dtype that is not the one a reader expects is refused by the reader
(its `expect`, or its own check of :meth:`NpzArchive.header`) before any
data is read.
"""

import json
import os
import zipfile
import zlib

import numpy as np

from ..errors import InvalidArgumentError
from .buffers import check_allocation, nbytes
from .dtypes import HALF_DTYPES

__all__ = ["NpzArchive", "read_npz", "write_npz", "DTYPES_ENTRY"]

#: The entry of an archive that names the dtype of each array stored as its
#: ``uint16`` bits (a 0-d string array of a JSON object).
DTYPES_ENTRY = "__dtypes__"
# the dtypes stored as bits, by name
_ENCODED = {dtype.name: dtype for dtype in HALF_DTYPES}
_BITS = np.dtype(np.uint16)

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
        # the entries stored as bits: name -> the dtype they decode to
        self._decoded = {}
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
        if DTYPES_ENTRY in self._headers:
            self._decoded = self._read_dtypes()

    def _read_dtypes(self):
        """The checked ``{name: half dtype}`` of the entries that
        :data:`DTYPES_ENTRY` names (which is then no longer an entry)."""
        shape, dtype = self._headers[DTYPES_ENTRY][:2]
        where = f"entry {DTYPES_ENTRY!r}"
        if shape != () or dtype.kind != "U":
            raise self.error(
                f"{where} must be a 0-d string array, got shape {shape} and "
                f"dtype {dtype}"
            )
        (text,) = self.read(DTYPES_ENTRY)
        del self._headers[DTYPES_ENTRY]
        try:
            names = json.loads(text.item())
        except (ValueError, RecursionError) as exc:
            raise self.error(f"{where} is not valid JSON: {exc}") from None
        if not isinstance(names, dict) or not all(
                isinstance(v, str) for v in names.values()):
            raise self.error(
                f"{where} must be a JSON object of dtype names, got "
                f"{_shorten(names)}"
            )
        decoded = {}
        for name, dtype_name in names.items():
            target = _ENCODED.get(dtype_name)
            if target is None:
                raise self.error(
                    f"{where} gives entry {_shorten(name)} the dtype "
                    f"{_shorten(dtype_name)}; the dtypes stored as bits are "
                    f"{', '.join(_ENCODED)}"
                )
            header = self._headers.get(name)
            if header is None:
                raise self.error(
                    f"{where} names entry {_shorten(name)} ({dtype_name}), which the "
                    "archive does not hold"
                )
            stored = header[1]
            if stored.kind != "u" or stored.itemsize != _BITS.itemsize:
                raise self.error(
                    f"entry {name!r} is {dtype_name} stored as dtype {stored}; "
                    f"its bits must be stored as {_BITS}"
                )
            decoded[name] = target
        return decoded

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
        if dtype.kind == "V" and dtype.fields is None:
            raise self.error(
                f"entry {name!r} holds anonymous {dtype.itemsize}-byte records "
                f"(dtype {dtype.str}), as np.savez writes bfloat16 and loses "
                "its type; write_npz stores it as bits with its name"
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
        the archive has no such entry (the half dtype of an entry stored as
        bits, see the module's notes)."""
        entry = self._headers.get(name)
        if entry is None:
            return None
        return entry[0], self._decoded.get(name, entry[1])

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
        for name in self._headers:
            why = expect(name, *self.header(name))
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
                array = self._read_one(name)
            except _UNREADABLE as exc:
                raise self.error(f"entry {name!r}: {exc}") from None
            target = self._decoded.get(name)
            if target is not None:
                if array.dtype != _BITS:   # the other byte order
                    array = array.byteswap(inplace=True).view(_BITS)
                array = array.view(target)
            arrays.append(array)
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


def write_npz(file, arrays):
    """Write `arrays` as an ``.npz`` archive that :func:`read_npz` reads back
    bit for bit, half-precision arrays included.

    float16 and bfloat16 arrays are stored as their ``uint16`` bits, with
    their dtype names in the entry :data:`DTYPES_ENTRY` (see the module's
    notes); every other array as ``np.savez`` stores it.

    Parameters
    ----------
    file : str or os.PathLike or file-like
        A path is written as given (no ``.npz`` is appended); a file object
        from its current position, and left open.
    arrays : dict
        Entry name (str) -> array-like.  Objects (pickles) are not written.

    Returns
    -------
    None

    Raises
    ------
    InvalidArgumentError
        If an entry is named :data:`DTYPES_ENTRY` or holds Python objects;
        nothing is written then.

    Examples
    --------
    >>> import io
    >>> import ml_dtypes
    >>> import numpy as np
    >>> from sparsegrad.framework.archives import read_npz, write_npz
    >>> buf = io.BytesIO()
    >>> write_npz(buf, {"w": np.array([1.5, -0.0], ml_dtypes.bfloat16)})
    >>> _ = buf.seek(0)
    >>> read_npz(buf, "cannot read")["w"]
    array([1.5, -0], dtype=bfloat16)
    """
    stored, dtypes = {}, {}
    for name, value in arrays.items():
        if name == DTYPES_ENTRY:
            raise InvalidArgumentError(
                f"write_npz: the entry name {DTYPES_ENTRY!r} is reserved for the "
                "dtypes of half-precision arrays"
            )
        array = np.asarray(value)
        if array.dtype.hasobject:
            raise InvalidArgumentError(
                f"write_npz: entry {name!r} holds Python objects (dtype "
                f"{array.dtype}); only arrays of numbers and strings are written"
            )
        if array.dtype in HALF_DTYPES:
            dtypes[name] = array.dtype.name
            array = array.view(_BITS)
        stored[name] = array
    if dtypes:
        stored[DTYPES_ENTRY] = np.asarray(json.dumps(dtypes, sort_keys=True))
    if isinstance(file, (str, bytes, os.PathLike)):
        with open(file, "wb") as f:
            _write_members(f, stored)
    else:
        _write_members(file, stored)


def _write_members(file, arrays):
    """np.savez's archive (uncompressed, zip64 members), without its keyword
    names that an entry may not take (``file``, ``allow_pickle``)."""
    with zipfile.ZipFile(file, "w", zipfile.ZIP_STORED, allowZip64=True) as z:
        for name, array in arrays.items():
            with z.open(f"{name}.npy", "w", force_zip64=True) as member:
                np.lib.format.write_array(member, array, allow_pickle=False)


def _shorten(value, most=60):
    """repr(value), cut to `most` characters (a message stays one line)."""
    text = repr(value)
    return text if len(text) <= most else text[:most - 3] + "..."
