"""Tests for atomic result writing, streamed .npy output and plain-text formatting."""

from __future__ import annotations

import gc
import json
import os
import shutil
import stat
from pathlib import Path

import numpy as np
import pytest
from numpy.testing import assert_array_equal

from jaccli.io import atomic, writers
from jaccli.errors import ResourceLimitError, UsageError
from jaccli.io.writers import META_KEY, NpyStreamWriter, format_text, write_blocks


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(7)


@pytest.fixture
def existing(tmp_path):
    """A target per format that already holds a previous result."""

    def make(suffix: str) -> tuple[Path, bytes]:
        path = tmp_path / f"out{suffix}"
        path.write_bytes(b"previous result, must survive\n")
        return path, path.read_bytes()

    return make


def temp_files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


def reject_json_constants(token: str) -> None:
    raise AssertionError(f"invalid JSON token {token}")


# ---------------------------------------------------------------- formats


def test_npy_round_trip(tmp_path, rng):
    J = rng.normal(size=(3, 4))
    write_blocks(tmp_path / "J.npy", {"df_dx": J}, meta={"ignored": True})
    assert_array_equal(np.load(tmp_path / "J.npy", allow_pickle=False), J)
    assert temp_files(tmp_path) == []


def test_npy_name_gets_no_extra_suffix(tmp_path):
    write_blocks(str(tmp_path / "J.NPY"), {"J": np.eye(2)})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["J.NPY"]


def test_npy_with_several_blocks_suggests_npz(tmp_path):
    with pytest.raises(UsageError) as info:
        write_blocks(tmp_path / "J.npy", {"df_dx": np.eye(2), "df_dy": np.eye(2)})
    assert str(info.value) == (
        f"{tmp_path / 'J.npy'} holds 2 blocks (df_dx, df_dy); a .npy file holds one array: use .npz"
    )
    assert not (tmp_path / "J.npy").exists()


def test_npz_round_trip_with_meta(tmp_path, rng):
    blocks = {"df_dx": rng.normal(size=(2, 3)), "df_dy": rng.normal(size=(2,)), "file": np.ones(1)}
    meta = {"shape": (2, 3), "rows": np.arange(2), "nonfinite": np.int64(0), "max": np.nan,
            "path": Path("f.py"), "dtype": np.dtype("float64")}
    write_blocks(tmp_path / "J.npz", blocks, meta)
    with np.load(tmp_path / "J.npz", allow_pickle=False) as npz:
        assert npz.files == ["df_dx", "df_dy", "file", META_KEY]
        for key, block in blocks.items():
            assert_array_equal(npz[key], block)
        stored = json.loads(str(npz[META_KEY]), parse_constant=reject_json_constants)
    assert stored == {"shape": [2, 3], "rows": [0, 1], "nonfinite": 0, "max": "nan",
                      "path": "f.py", "dtype": "float64"}


def test_npz_without_meta_has_no_meta_key(tmp_path):
    write_blocks(tmp_path / "J.npz", {"J": np.eye(2)})
    with np.load(tmp_path / "J.npz", allow_pickle=False) as npz:
        assert npz.files == ["J"]


def test_npz_block_named_like_meta_is_refused(tmp_path):
    with pytest.raises(UsageError):
        write_blocks(tmp_path / "J.npz", {META_KEY: np.eye(2)})


def test_meta_that_is_not_json_is_a_type_error(tmp_path):
    with pytest.raises(TypeError):
        write_blocks(tmp_path / "J.npz", {"J": np.eye(2)}, {"x": object()})
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("suffix", "delimiter"), [(".csv", ","), (".txt", None)])
def test_text_round_trip_is_exact(tmp_path, rng, suffix, delimiter):
    J = rng.normal(size=(4, 3)) * 10.0 ** rng.integers(-8, 8, size=(4, 3))
    J[0, 0], J[1, 1] = np.nan, -np.inf
    write_blocks(tmp_path / f"J{suffix}", {"J": J})
    assert_array_equal(np.loadtxt(tmp_path / f"J{suffix}", delimiter=delimiter), J)


@pytest.mark.parametrize(("block", "text"), [(np.array([1.0, 2.5]), "1.0,2.5\n"), (np.array(3.0), "3.0\n")])
def test_csv_writes_low_dimensional_blocks_as_one_row(tmp_path, block, text):
    write_blocks(tmp_path / "g.csv", {"g": block})
    assert (tmp_path / "g.csv").read_text() == text


def test_csv_precision(tmp_path):
    write_blocks(tmp_path / "J.csv", {"J": np.array([[1 / 3, 2e-10]])}, precision=3)
    assert (tmp_path / "J.csv").read_text() == "0.333,2e-10\n"


def test_txt_uses_spaces(tmp_path):
    write_blocks(tmp_path / "J.txt", {"J": np.array([[1, 2], [3, 4]])})
    assert (tmp_path / "J.txt").read_text() == "1 2\n3 4\n"


def test_csv_refuses_more_than_two_axes(tmp_path):
    with pytest.raises(UsageError):
        write_blocks(tmp_path / "J.csv", {"J": np.zeros((2, 2, 2))})


def test_csv_refuses_several_blocks(tmp_path):
    with pytest.raises(UsageError):
        write_blocks(tmp_path / "J.csv", {"a": np.eye(2), "b": np.eye(2)})


def test_json_is_valid_with_non_finite_values(tmp_path):
    J = np.array([[1.5, np.nan], [np.inf, -np.inf]])
    write_blocks(tmp_path / "J.json", {"J": J, "mask": np.array([True, False]), "n": np.array(3)},
                 {"command": "jacobian", "max_rel": np.float32(np.inf)})
    document = json.loads((tmp_path / "J.json").read_text(), parse_constant=reject_json_constants)
    assert document == {
        "blocks": {
            "J": {"shape": [2, 2], "dtype": "float64", "data": [[1.5, "nan"], ["inf", "-inf"]]},
            "mask": {"shape": [2], "dtype": "bool", "data": [True, False]},
            "n": {"shape": [], "dtype": "int64", "data": 3},
        },
        "meta": {"command": "jacobian", "max_rel": "inf"},
    }


def test_json_round_trips_floats_exactly(tmp_path, rng):
    J = rng.normal(size=(3, 3))
    write_blocks(tmp_path / "J.json", {"J": J})
    document = json.loads((tmp_path / "J.json").read_text())
    assert document["meta"] == {}
    assert_array_equal(np.array(document["blocks"]["J"]["data"]), J)


@pytest.mark.parametrize("name", ["J.mat", "J", "J.npy.bak"])
def test_unknown_format_lists_formats(tmp_path, name):
    with pytest.raises(UsageError):
        write_blocks(tmp_path / name, {"J": np.eye(2)})


def test_missing_directory(tmp_path):
    target = tmp_path / "no" / "J.npy"
    with pytest.raises(UsageError) as info:
        write_blocks(target, {"J": np.eye(2)})
    assert str(info.value) == f"cannot write {target}: directory {target.parent} does not exist"


def test_target_that_is_a_directory(tmp_path):
    (tmp_path / "J.npy").mkdir()
    with pytest.raises(UsageError):
        write_blocks(tmp_path / "J.npy", {"J": np.eye(2)})


def test_no_blocks(tmp_path):
    with pytest.raises(UsageError):
        write_blocks(tmp_path / "J.npz", {})


# ---------------------------------------------------------------- atomicity


@pytest.mark.parametrize("suffix", [".npy", ".npz"])
def test_unserialisable_block_leaves_target_untouched(existing, suffix):
    target, before = existing(suffix)
    with pytest.raises(ValueError, match="allow_pickle=False"):
        write_blocks(target, {"J": np.array([None, 1], dtype=object)})
    assert target.read_bytes() == before
    assert temp_files(target.parent) == []


@pytest.mark.parametrize("suffix", [".csv", ".json"])
def test_unformattable_block_leaves_target_untouched(existing, suffix):
    target, before = existing(suffix)
    with pytest.raises((TypeError, ValueError)):
        write_blocks(target, {"J": np.array([1 + 2j, object()], dtype=object)})
    assert target.read_bytes() == before
    assert temp_files(target.parent) == []


@pytest.mark.parametrize("suffix", [s for s in writers.WRITE_FORMATS if s != ".zarr"])  # (a directory: test_parallel_zarr)
@pytest.mark.parametrize("error", [OSError("disk gone"), KeyboardInterrupt()])
def test_failing_rename_leaves_target_untouched(existing, monkeypatch, suffix, error):
    target, before = existing(suffix)

    def broken_replace(src, dst):
        raise error

    monkeypatch.setattr(atomic.os, "replace", broken_replace)
    with pytest.raises(type(error)):
        write_blocks(target, {"J": np.eye(3)})
    assert target.read_bytes() == before
    assert temp_files(target.parent) == []


def test_interrupt_midway_through_writing(existing, monkeypatch):
    target, before = existing(".npz")
    real_write_array = np.lib.format.write_array
    calls = []

    def interrupt_on_second_block(fp, array, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        real_write_array(fp, array, **kwargs)

    monkeypatch.setattr(np.lib.format, "write_array", interrupt_on_second_block)
    with pytest.raises(KeyboardInterrupt):
        write_blocks(target, {"a": np.eye(50), "b": np.eye(50)})
    assert len(calls) == 2
    assert target.read_bytes() == before
    assert temp_files(target.parent) == []


def test_failing_fsync_leaves_target_untouched(existing, monkeypatch):
    target, before = existing(".json")

    def broken_fsync(fd):
        raise OSError("I/O error")

    monkeypatch.setattr(atomic.os, "fsync", broken_fsync)
    with pytest.raises(OSError, match="I/O error"):
        write_blocks(target, {"J": np.eye(2)})
    assert target.read_bytes() == before
    assert temp_files(target.parent) == []


def test_successful_write_replaces_target(existing):
    target, _ = existing(".npy")
    write_blocks(target, {"J": np.eye(2)})
    assert_array_equal(np.load(target), np.eye(2))
    assert temp_files(target.parent) == []


def test_new_file_gets_the_usual_permissions(tmp_path):
    mask = os.umask(0o022)
    try:
        atomic._umask.cache_clear()
        write_blocks(tmp_path / "J.npy", {"J": np.eye(2)})
    finally:
        os.umask(mask)
        atomic._umask.cache_clear()
    assert stat.S_IMODE((tmp_path / "J.npy").stat().st_mode) == 0o644


def test_replaced_file_keeps_its_permissions(existing):
    target, _ = existing(".csv")
    target.chmod(0o640)
    write_blocks(target, {"J": np.eye(2)})
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


def test_temporary_file_is_new_private_and_beside_the_target(tmp_path, monkeypatch):
    # atomic.mkstemp stands in for tempfile.mkstemp (not imported: ~3 ms of start-up) and keeps its guarantees.
    monkeypatch.chdir(tmp_path)
    fd, name = atomic.mkstemp(Path("J.npy"))
    try:
        os.write(fd, b"ok")
    finally:
        os.close(fd)
    made = Path(name)
    assert made.is_absolute() and made.parent == tmp_path
    assert made.name.startswith(".J.npy.") and made.name.endswith(".tmp") and len(made.name) > len(".J.npy..tmp")
    assert stat.S_IMODE(made.stat().st_mode) == 0o600 and made.read_bytes() == b"ok"
    assert atomic.temporary_file(tmp_path / "J.npy") != made  # another name each time


def test_temporary_file_never_takes_an_existing_file_or_link(tmp_path, monkeypatch):
    target, elsewhere = tmp_path / "J.npy", tmp_path / "elsewhere"
    drawn = iter([b"\x00" * 6, b"\x01" * 6, b"\x02" * 6])
    monkeypatch.setattr(os, "urandom", lambda n: next(drawn))
    (tmp_path / f".J.npy.{'00' * 6}.tmp").write_bytes(b"someone's")
    (tmp_path / f".J.npy.{'01' * 6}.tmp").symlink_to(elsewhere)  # a dangling link: O_NOFOLLOW with O_EXCL
    made = atomic.temporary_file(target)
    assert made.name == f".J.npy.{'02' * 6}.tmp" and made.read_bytes() == b""
    assert (tmp_path / f".J.npy.{'00' * 6}.tmp").read_bytes() == b"someone's" and not elsewhere.exists()


def test_temporary_file_gives_up_when_every_name_is_taken(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "urandom", lambda n: b"\x00" * n)
    (tmp_path / f".J.npy.{'00' * 6}.tmp").write_bytes(b"")
    with pytest.raises(FileExistsError):
        atomic.temporary_file(tmp_path / "J.npy")


# ---------------------------------------------------------------- format_text


def test_format_text_rows_and_delimiter():
    text = format_text(np.array([[1.0, 0.5], [np.nan, -np.inf]]), 3, ",")
    assert text == "1,0.5\nnan,-inf\n"


@pytest.mark.parametrize(
    ("array", "text"),
    [
        (np.array(2.0), "2\n"),
        (np.array([1, 2, 3]), "1 2 3\n"),
        (np.array([True, False]), "1 0\n"),
        (np.zeros((0, 3)), ""),
        (np.array([1 / 3]), "0.333333\n"),
    ],
)
def test_format_text_shapes(array, text):
    assert format_text(array, 6, " ") == text


def test_format_text_shortest_exact_by_default():
    values = np.array([0.1, 1 / 3, 1e-300, -0.0])
    text = format_text(values)
    assert text == "0.1 0.3333333333333333 1e-300 -0.0\n"
    assert_array_equal(np.array(text.split(), dtype=float), values)


def test_format_text_refuses_three_axes():
    with pytest.raises(ValueError):
        format_text(np.zeros((1, 1, 1)), 6, " ")


def test_format_text_refuses_zero_precision():
    with pytest.raises(ValueError):
        format_text(np.zeros(2), 0, " ")


# ---------------------------------------------------------------- NpyStreamWriter


def test_stream_round_trip_in_blocks(tmp_path, rng):
    expected = rng.normal(size=(23, 4, 2)).astype(np.float32)
    target = tmp_path / "J.npy"
    with NpyStreamWriter(target, expected.shape, np.float32) as out:
        for start in range(0, 23, 5):
            out.write(start, expected[start : start + 5])
        assert not target.exists()
    loaded = np.load(target, allow_pickle=False)
    assert loaded.dtype == np.float32
    assert_array_equal(loaded, expected)
    assert temp_files(tmp_path) == []


def test_stream_rows_of_every_sample_at_once_along_axis_1(tmp_path, rng):
    # Per-sample Jacobians (B, M, N) come as rows k of every sample: (B, k, N) pieces.
    expected = rng.normal(size=(5, 7, 3, 2))
    target = tmp_path / "J.npy"
    with NpyStreamWriter(target, expected.shape, row_axis=1) as out:
        for start in (4, 0, 2):  # out of order, one piece shorter
            out.write(start, expected[:, start:start + (2 if start < 4 else 3)])
        assert out.rows_missing == 0
    assert_array_equal(np.load(target), expected)


def test_stream_along_axis_1_checks_the_piece_and_counts_missing_rows(tmp_path):
    out = NpyStreamWriter(tmp_path / "J.npy", (3, 4, 2), row_axis=1)
    with pytest.raises(ValueError):
        out.write(0, np.ones((2, 1, 2)))
    with pytest.raises(ValueError):
        out.write(3, np.ones((3, 2, 2)))
    out.write(1, np.ones((3, 2, 2)))
    with pytest.raises(ValueError):
        out.commit()
    out.abort()
    assert temp_files(tmp_path) == []


def test_stream_rows_out_of_order_and_single_rows(tmp_path):
    with NpyStreamWriter(tmp_path / "J.npy", (3, 2)) as out:
        out.write(2, np.array([5.0, 6.0]))
        out.write(0, np.array([[1.0, 2.0], [3.0, 4.0]]))
    assert_array_equal(np.load(tmp_path / "J.npy"), [[1, 2], [3, 4], [5, 6]])


def test_stream_exception_aborts_and_keeps_target(existing):
    target, before = existing(".npy")
    with pytest.raises(RuntimeError, match="row failed"):
        with NpyStreamWriter(target, (4, 3)) as out:
            out.write(0, np.ones((2, 3)))
            raise RuntimeError("row failed")
    assert target.read_bytes() == before
    assert temp_files(target.parent) == []


def test_stream_missing_rows_refuse_to_commit(existing):
    target, before = existing(".npy")
    with pytest.raises(ValueError):
        with NpyStreamWriter(target, (4, 3)) as out:
            out.write(1, np.ones((2, 3)))
    assert target.read_bytes() == before
    assert temp_files(target.parent) == []


def test_stream_partial_commit_on_request(tmp_path):
    out = NpyStreamWriter(tmp_path / "J.npy", (3, 2))
    out.write(1, np.ones(2))
    assert out.rows_missing == 2
    out.commit(allow_partial=True)
    assert_array_equal(np.load(tmp_path / "J.npy"), [[0, 0], [1, 1], [0, 0]])


def test_stream_abort_is_idempotent_and_closes(tmp_path):
    out = NpyStreamWriter(tmp_path / "J.npy", (2, 2))
    out.abort()
    out.abort()
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ValueError):
        out.write(0, np.ones((1, 2)))
    with pytest.raises(ValueError):
        out.commit()


def test_stream_dropped_without_commit_removes_temp(tmp_path):
    out = NpyStreamWriter(tmp_path / "J.npy", (2, 2))
    assert len(temp_files(tmp_path)) == 1
    del out
    gc.collect()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("start", "block"),
    [
        (3, np.ones((2, 2))),
        (-1, np.ones((1, 2))),
        (0, np.ones((2, 3))),
    ],
)
def test_stream_rejects_blocks_that_do_not_fit(tmp_path, start, block):
    with NpyStreamWriter(tmp_path / "J.npy", (4, 2)) as out:
        with pytest.raises(ValueError):
            out.write(start, block)
        out.write(0, np.zeros((4, 2)))


def test_stream_zero_rows(tmp_path):
    with NpyStreamWriter(tmp_path / "J.npy", (0, 3)):
        pass
    assert np.load(tmp_path / "J.npy").shape == (0, 3)


def test_stream_checks_free_space_first(tmp_path, monkeypatch):
    usage = shutil.disk_usage(tmp_path)
    monkeypatch.setattr(shutil, "disk_usage", lambda _: usage._replace(free=1000))
    with pytest.raises(ResourceLimitError) as info:
        NpyStreamWriter(tmp_path / "J.npy", (1000, 1000))
    assert str(info.value) == (
        f"writing {tmp_path / 'J.npy'} needs 7.6 MiB but only 1000 B is free in {tmp_path}; "
        "free some space or write elsewhere"
    )
    assert info.value.exit_code == 4
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("name", "shape"),
    [
        ("J.npz", (2, 2)),
        ("J.npy", ()),
        ("no/J.npy", (2, 2)),
    ],
)
def test_stream_bad_arguments(tmp_path, name, shape):
    with pytest.raises(UsageError):
        NpyStreamWriter(tmp_path / name, shape)


def test_format_text_refuses_non_real_numbers():
    with pytest.raises(ValueError):
        format_text(np.array([1 + 2j]), 6, " ")


def test_writing_through_a_symbolic_link_replaces_the_file_it_points_to(tmp_path):
    from jaccli.io.npy_stream import NpyStreamWriter
    from jaccli.io.writers import write_blocks

    (tmp_path / "link.npy").symlink_to("target.npy")  # dangling until written
    write_blocks(tmp_path / "link.npy", {"J": np.eye(2)})
    assert (tmp_path / "link.npy").is_symlink()
    assert_array_equal(np.load(tmp_path / "target.npy"), np.eye(2))
    writer = NpyStreamWriter(tmp_path / "link.npy", (2, 3))
    writer.write(0, np.ones((2, 3)))
    writer.commit()
    assert (tmp_path / "link.npy").is_symlink()
    assert_array_equal(np.load(tmp_path / "target.npy"), np.ones((2, 3)))


def test_an_interruption_held_back_is_raised_when_the_outermost_uninterrupted_block_ends():
    import threading

    from jaccli.io.atomic import hold_back, uninterrupted

    assert not hold_back(KeyboardInterrupt("outside"))  # no block: the handler raises it itself
    reached = False
    with pytest.raises(KeyboardInterrupt, match="first"):
        with uninterrupted():
            with uninterrupted():
                assert hold_back(KeyboardInterrupt("first")) and hold_back(KeyboardInterrupt("second"))
            reached = True
    assert reached and not hold_back(KeyboardInterrupt("after"))
    # A block in another thread does not hold the main thread's signals (Python runs handlers there).
    held = []
    worker = threading.Thread(target=lambda: held.append(_held_in_a_block(uninterrupted, hold_back)))
    worker.start()
    worker.join()
    assert held == [False]


def _held_in_a_block(uninterrupted, hold_back) -> bool:
    with uninterrupted():
        return hold_back(KeyboardInterrupt("from the main thread's handler"))
