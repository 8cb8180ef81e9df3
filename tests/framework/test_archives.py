"""read_npz / NpzArchive: headers are read and checked before any data, so a
small file cannot make the reader allocate what its headers claim."""

import io
import re
import struct
import zipfile

import numpy as np
import pytest

from sparsegrad.errors import InvalidArgumentError
from sparsegrad.framework.archives import NpzArchive, read_npz


def _savez(**arrays):
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def _npy(header, data=b""):
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, header)
    return buf.getvalue() + data


def _zip(members, compression=zipfile.ZIP_STORED):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


def _header(descr, shape, fortran_order=False):
    return {"descr": descr, "fortran_order": fortran_order, "shape": shape}


def _refused(data, fragment, **kwargs):
    with pytest.raises(InvalidArgumentError, match=re.escape(fragment)) as info:
        read_npz(io.BytesIO(data), "cannot read", **kwargs)
    assert str(info.value).startswith("cannot read <_io.BytesIO")
    return info.value


def test_round_trip_of_every_kind_of_array(tmp_path):
    arrays = {
        "f": np.arange(12.0).reshape(3, 4),
        "fortran": np.asfortranarray(np.arange(6, dtype=np.int32).reshape(2, 3)),
        "scalar": np.int64(7),
        "text": np.asarray('{"a": 1}'),
        "empty": np.zeros((0, 5), np.float32),
        "big_endian": np.arange(3, dtype=">f8"),
        "bools": np.array([True, False]),
    }
    path = tmp_path / "all.npz"
    np.savez(path, **arrays)
    for source in (path, str(path), io.BytesIO(path.read_bytes())):
        got = read_npz(source, "cannot read")
        assert sorted(got) == sorted(arrays)
        for key, value in arrays.items():
            assert got[key].dtype == np.asarray(value).dtype, key
            assert got[key].shape == np.shape(value), key
            np.testing.assert_array_equal(got[key], value)
    assert got["fortran"].flags.f_contiguous
    assert got["f"].flags.writeable


def test_compressed_archives_and_an_empty_one():
    buf = io.BytesIO()
    np.savez_compressed(buf, a=np.zeros(1000), b=np.arange(5))
    got = read_npz(io.BytesIO(buf.getvalue()), "cannot read")
    np.testing.assert_array_equal(got["a"], np.zeros(1000))
    np.testing.assert_array_equal(got["b"], np.arange(5))
    assert read_npz(io.BytesIO(_savez()), "cannot read") == {}


def test_a_file_object_is_read_from_its_position_and_left_open():
    data = _savez(a=np.arange(3))
    f = io.BytesIO(b"junk" + data)
    f.seek(4)
    np.testing.assert_array_equal(read_npz(f, "cannot read")["a"], np.arange(3))
    assert not f.closed


def test_the_archive_reads_headers_first_and_data_on_request():
    data = _savez(a=np.arange(3), b=np.ones((2, 2), np.float32))
    with NpzArchive(io.BytesIO(data), "cannot read") as archive:
        assert archive.names == ["a", "b"]
        assert archive.header("b") == ((2, 2), np.dtype(np.float32))
        assert archive.header("c") is None
        b, a = archive.read("b", "a")
        np.testing.assert_array_equal(a, np.arange(3))
        np.testing.assert_array_equal(b, np.ones((2, 2)))
        with pytest.raises(InvalidArgumentError, match="it has no entry 'c'"):
            archive.read("c")


def test_expect_refuses_an_entry_by_its_header():
    data = _savez(a=np.arange(3), b=np.ones(2))
    seen = []

    def expect(name, shape, dtype):
        seen.append((name, shape, dtype))
        return None if name == "a" else f"has shape {shape}; expected (5,)"

    _refused(data, "entry 'b' has shape (2,); expected (5,)", expect=expect)
    assert seen == [("a", (3,), np.dtype(np.int64)), ("b", (2,), np.dtype(np.float64))]
    got = read_npz(io.BytesIO(data), "cannot read", expect=lambda *a: None)
    np.testing.assert_array_equal(got["b"], np.ones(2))


HUGE = [
    # (what, members, fragment)
    ("2**40 floats in 16 bytes", {"x.npy": _npy(_header("<f4", (2**40,)), b"\0" * 16)},
     "entry 'x' declares shape (1099511627776,) and dtype float32 (4398046511104 "
     "bytes) but holds 16 bytes of data"),
    ("a string of 5e8 characters", {"meta.npy": _npy(_header("<U500000000", ()))},
     "entry 'meta' declares shape () and dtype <U500000000 (2000000000 bytes) but "
     "holds 0 bytes"),
    ("one byte short", {"x.npy": _npy(_header("<f8", (2, 2)), b"\0" * 31)},
     "(32 bytes) but holds 31 bytes of data"),
    ("a negative length", {"x.npy": _npy(_header("<f8", (2, -2)))},
     "entry 'x' has the negative shape (2, -2)"),
    ("objects", {"x.npy": _npy(_header("|O", (1,)), b"\0" * 8)},
     "entry 'x' holds Python objects (dtype object); pickled arrays are not read"),
    ("not an array", {"x.txt": b"hello"}, "member 'x.txt' is not a .npy array"),
    ("a bad header", {"x.npy": b"\x93NUMPY\x01\x00\x04\x00{}  "},
     "entry 'x': Header does not contain the correct keys"),
    ("no magic", {"x.npy": b"hello, world"}, "entry 'x': the magic string"),
    ("format 3.0", {"x.npy": b"\x93NUMPY\x03\x00" + b"\0" * 8},
     "entry 'x': .npy format version (3, 0) is not read"),
]


@pytest.mark.parametrize("what,members,fragment", HUGE, ids=[h[0] for h in HUGE])
def test_a_member_that_claims_more_than_it_holds_is_refused(what, members, fragment):
    _refused(_zip(members), fragment)


def test_an_entry_twice_is_refused():
    data = _zip({"a.npy": _npy(_header("<f8", (1,)), b"\0" * 8)})
    raw = bytearray(_zip({"a.npy": _npy(_header("<f8", (1,)), b"\0" * 8),
                          "b.npy": _npy(_header("<f8", (1,)), b"\0" * 8)}))
    for at in [m.start() for m in re.finditer(rb"b\.npy", bytes(raw))]:
        raw[at:at + 1] = b"a"                 # both members named a.npy
    assert read_npz(io.BytesIO(data), "cannot read")["a"].shape == (1,)
    _refused(bytes(raw), "entry 'a' appears twice")


def _lying_directory(data, size):
    """`data` (a zip of one member) whose directory says the member holds
    `size` bytes, compressed and not."""
    raw = bytearray(data)
    at = raw.index(b"PK\x01\x02")
    struct.pack_into("<II", raw, at + 20, size, size)
    return bytes(raw)


def test_a_zip_directory_that_claims_more_than_the_file_is_refused():
    member = _npy(_header("<f8", (2**29 - 16,)), b"\0" * 16)
    _refused(_lying_directory(_zip({"x.npy": member}), 2**32 - 1),
             "entry 'x' claims 4294967295 bytes, more than the file can hold")
    # deflated: at most 1032 bytes out per byte in
    deflated = _zip({"x.npy": member}, zipfile.ZIP_DEFLATED)
    raw = bytearray(deflated)
    at = raw.index(b"PK\x01\x02")
    struct.pack_into("<I", raw, at + 24, 2**32 - 1)   # the uncompressed size only
    _refused(bytes(raw), "entry 'x' claims 4294967295 bytes")


@pytest.mark.parametrize("data,fragment", [
    (b"", "the file is empty"),
    (b"hello world", "it is not an .npz (zip) archive"),
    (_npy(_header("<f8", (1,)), b"\0" * 8), "a single .npy array, not an .npz"),
    (_savez(a=np.arange(3))[:-30], "File is not a zip file"),
])
def test_files_that_are_not_archives(data, fragment):
    _refused(data, fragment)


def test_a_missing_path(tmp_path):
    with pytest.raises(InvalidArgumentError, match="No such file") as info:
        read_npz(tmp_path / "nope.npz", "cannot read")
    assert "nope.npz" in str(info.value)


def test_a_deflated_stream_that_ends_early_is_refused():
    data = bytearray(_zip({"x.npy": _npy(_header("<f8", (4096,)), b"\0" * 32768)},
                          zipfile.ZIP_DEFLATED))
    at = data.index(b"PK\x01\x02")
    compressed = struct.unpack_from("<I", data, at + 20)[0]
    start = data.index(b"x.npy") + 5             # the local header's name, data
    del data[start + compressed // 2: start + compressed]   # half of the stream
    with pytest.raises(InvalidArgumentError, match="cannot read"):
        read_npz(io.BytesIO(bytes(data)), "cannot read")


def _deflated_zeros(path, name, shape, dtype):
    """A small .npz whose member `name` is a real, deflated array of zeros."""
    dtype = np.dtype(dtype)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z, \
            z.open(name + ".npy", "w", force_zip64=True) as f:
        f.write(_npy(_header(dtype.str, shape)))
        left = int(np.prod(shape)) * dtype.itemsize
        chunk = bytes(1 << 24)
        while left:
            f.write(chunk[:min(left, len(chunk))])
            left -= min(left, len(chunk))


def test_an_array_beyond_the_address_space_left_is_refused_before_reading(
        tmp_path, run_limited):
    # 1 GiB of real (deflated) zeros: an honest file, but more than the
    # process may map under its RLIMIT_AS
    path = tmp_path / "zeros.npz"
    _deflated_zeros(path, "zeros", (2**27,), np.float64)
    out = run_limited("""
        limit(1 << 29)
        from sparsegrad.framework.archives import read_npz
        expect_refusal(lambda: read_npz(sys.argv[1], "cannot read"),
                       "entry 'zeros' asks for a result of shape (134217728,) "
                       "and dtype float64 (1073741824 bytes)", "RLIMIT_AS")
    """, path)
    assert "refused" in out
