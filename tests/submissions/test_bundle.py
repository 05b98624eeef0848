"""A bundle is untrusted input: every unsafe archive or folder is refused before anything is
written outside a temporary folder, and an honest one opens to its results folder."""

from __future__ import annotations

import io
import os
import stat
import tarfile
import tempfile
import zipfile
from pathlib import Path

import pytest

from recallbench.submissions.bundle import BundleError, Limits, opened_bundle, safe_member_name


@pytest.fixture(autouse=True)
def _private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Temporary folders go under the test's own folder, so a test can see what was left."""
    root = tmp_path / "tmp"
    root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(root))
    return root


def _left_over(tmp_path: Path) -> list[str]:
    """Everything written under the test folder besides the archive and the temp root."""
    return sorted(
        str(p.relative_to(tmp_path))
        for p in tmp_path.rglob("*")
        if p.name != "tmp" and not p.name.startswith("bundle.")
    )


def _zip(path: Path, members: dict[str, bytes], modes: dict[str, int] | None = None) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            info = zipfile.ZipInfo(name)
            info.compress_type = zipfile.ZIP_DEFLATED
            if modes and name in modes:
                info.external_attr = modes[name] << 16
            zf.writestr(info, data)
    return path


def _tar(path: Path, members: list[tarfile.TarInfo], data: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tf:
        for info in members:
            payload = data.get(info.name)
            if payload is not None:
                info.size = len(payload)
            tf.addfile(info, io.BytesIO(payload) if payload is not None else None)
    return path


def _reg(name: str) -> tarfile.TarInfo:
    return tarfile.TarInfo(name)


RUN = {"run/run.json": b"{}", "run/metrics.jsonl": b""}


def test_an_honest_zip_and_tar_open_to_the_folder_holding_run_json(tmp_path: Path) -> None:
    z = _zip(tmp_path / "bundle.zip", RUN)
    with opened_bundle(z) as run_dir:
        assert (run_dir / "run.json").read_bytes() == b"{}"
        assert run_dir.name == "run"
        inside = run_dir
    assert not inside.exists()  # the temporary copy is removed
    t = _tar(tmp_path / "bundle.tar.gz", [_reg(n) for n in RUN], RUN)
    with opened_bundle(t) as run_dir:
        assert sorted(p.name for p in run_dir.iterdir()) == ["metrics.jsonl", "run.json"]


@pytest.mark.parametrize(
    "name",
    ["../evil.txt", "run/../../evil.txt", "/tmp/evil.txt", "C:/evil.txt", "run\\..\\evil.txt"],
)
def test_path_traversal_and_absolute_members_are_refused_before_writing(
    tmp_path: Path, name: str
) -> None:
    z = _zip(tmp_path / "bundle.zip", {**RUN, name: b"x"})
    with pytest.raises(BundleError, match="traversal|absolute|backslash"), opened_bundle(z):
        pass
    t = _tar(tmp_path / "bundle.tar.gz", [_reg(name)], {name: b"x"})
    with pytest.raises(BundleError, match="traversal|absolute|backslash"), opened_bundle(t):
        pass
    assert _left_over(tmp_path) == []
    assert not (tmp_path / "evil.txt").exists()
    assert list((tmp_path / "tmp").iterdir()) == []


def test_tar_links_and_special_files_are_refused(tmp_path: Path) -> None:
    sym = _reg("run/link")
    sym.type, sym.linkname = tarfile.SYMTYPE, "/etc/passwd"
    hard = _reg("run/hard")
    hard.type, hard.linkname = tarfile.LNKTYPE, "run/run.json"
    dev = _reg("run/dev")
    dev.type = tarfile.CHRTYPE
    fifo = _reg("run/fifo")
    fifo.type = tarfile.FIFOTYPE
    for bad, word in ((sym, "symlink"), (hard, "hardlink"), (dev, "special"), (fifo, "special")):
        t = _tar(tmp_path / "bundle.tar.gz", [_reg("run/run.json"), bad], {"run/run.json": b"{}"})
        with pytest.raises(BundleError, match=word), opened_bundle(t):
            pass
    assert list((tmp_path / "tmp").iterdir()) == []


def test_zip_symlink_member_is_refused(tmp_path: Path) -> None:
    z = _zip(tmp_path / "bundle.zip", {**RUN, "run/link": b"/etc/passwd"},
             {"run/link": stat.S_IFLNK | 0o777})  # fmt: skip
    with pytest.raises(BundleError, match="symlink"), opened_bundle(z):
        pass


def test_archive_bombs_and_absurd_sizes_are_refused(tmp_path: Path) -> None:
    zeros = b"\0" * (8 << 20)  # 8 MiB of zeros deflate to about 8 KB: ratio near 1,000
    z = _zip(tmp_path / "bundle.zip", {**RUN, "run/bomb": zeros})
    with pytest.raises(BundleError, match="archive bomb"), opened_bundle(z):
        pass
    t = _tar(tmp_path / "bundle.tar.gz", [_reg("run/run.json"), _reg("run/bomb")],
             {"run/run.json": b"{}", "run/bomb": zeros})  # fmt: skip
    with pytest.raises(BundleError, match="archive bomb"), opened_bundle(t):
        pass
    small = Limits(total_bytes=100, ratio=1e9)
    z = _zip(tmp_path / "bundle.zip", {**RUN, "run/big": os.urandom(500)})
    with pytest.raises(BundleError, match="total_bytes"), opened_bundle(z, small):
        pass
    with (
        pytest.raises(BundleError, match="member_bytes"),
        opened_bundle(z, Limits(member_bytes=100, ratio=1e9)),
    ):
        pass
    many = {f"run/f{i}": b"" for i in range(5)}
    z = _zip(tmp_path / "bundle.zip", {**RUN, **many})
    with pytest.raises(BundleError, match="members"), opened_bundle(z, Limits(members=3)):
        pass
    assert list((tmp_path / "tmp").iterdir()) == []


def test_a_member_named_twice_is_refused(tmp_path: Path) -> None:
    infos = [_reg("run/run.json"), _reg("run/run.json")]
    t = _tar(tmp_path / "bundle.tar.gz", infos, {"run/run.json": b"{}"})
    with pytest.raises(BundleError, match="twice"), opened_bundle(t):
        pass


def test_a_folder_bundle_with_a_symlink_is_refused_and_never_written_to(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text("{}")
    (run / "link").symlink_to("/etc/passwd")
    with pytest.raises(BundleError, match="symlink"), opened_bundle(run):
        pass
    (run / "link").unlink()
    with opened_bundle(run) as copy:
        assert copy != run and (copy / "run.json").is_file()
        (copy / "metrics.jsonl").write_text("")
    assert sorted(p.name for p in run.iterdir()) == ["run.json"]


def test_no_run_json_and_not_an_archive_are_clear_errors(tmp_path: Path) -> None:
    z = _zip(tmp_path / "bundle.zip", {"a/x": b"", "b/y": b""})
    with pytest.raises(BundleError, match="no run.json"), opened_bundle(z):
        pass
    other = tmp_path / "notes.txt"
    other.write_text("hi")
    with (
        pytest.raises(BundleError, match="not a results folder or an archive"),
        opened_bundle(other),
    ):
        pass
    broken = tmp_path / "bundle.tar.gz"
    broken.write_bytes(b"not gzip")
    with pytest.raises(BundleError, match="not a readable tar"), opened_bundle(broken):
        pass


def test_safe_member_name_normalises_dots() -> None:
    assert str(safe_member_name("./run//run.json")) == "run/run.json"
    with pytest.raises(BundleError):
        safe_member_name("run/\x00")
