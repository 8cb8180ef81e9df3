"""Reading ``.npz`` archives whole, with one error for every way they fail."""

import zipfile
import zlib

import numpy as np

from ..errors import InvalidArgumentError

__all__ = ["read_npz"]

# what np.load and the reads of an archive's members raise on a bad file
_UNREADABLE = (OSError, EOFError, ValueError, zipfile.BadZipFile, zlib.error)


def read_npz(path, prefix):
    """The arrays of the ``.npz`` archive at `path`, as a dict of ndarrays.

    Pickled (object) arrays are refused.

    Parameters
    ----------
    path : str or os.PathLike or file-like
    prefix : str
        Opens the message of the error, which goes on with `path` and why.

    Returns
    -------
    dict

    Raises
    ------
    InvalidArgumentError
        ``"{prefix} {path!r}: {why}"`` if the file is missing, unreadable,
        damaged, holds pickled arrays or a single ``.npy`` array.

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
    try:
        data = np.load(path, allow_pickle=False)
    except _UNREADABLE as exc:
        raise InvalidArgumentError(f"{prefix} {path!r}: {exc}") from None
    if not isinstance(data, np.lib.npyio.NpzFile):
        raise InvalidArgumentError(
            f"{prefix} {path!r}: it holds a single .npy array, not an .npz archive")
    try:
        with data:
            return {k: data[k] for k in data.files}
    except _UNREADABLE as exc:
        raise InvalidArgumentError(f"{prefix} {path!r}: {exc}") from None
