"""``fetch-trace``: download from a local HTTP server on 127.0.0.1, verify SHA-256, refuse a
corrupted file, skip files already present, resume a broken download, bound the size."""

from __future__ import annotations

import fnmatch
import hashlib
import threading
import tomllib
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from lab01_cluster_sim.cli import main
from lab01_cluster_sim.errors import InputError
from lab01_cluster_sim.fetch import (DEFAULT_BASE_URL, SUMS_RESOURCE, ChecksumMismatch, fetch_trace, parse_sums,
                                     read_sums, shipped_sums)

ROOT = Path(__file__).resolve().parents[2]

# FIPS 180-2 test vectors: SHA-256("abc") and SHA-256("") (the empty file)
SHA_ABC = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
SHA_EMPTY = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
NODES = b"sn,cpu_milli,memory_mib,gpu,model\nopenb-node-0001,96000,393216,8,G2\n"


class _Handler(SimpleHTTPRequestHandler):
    """Serves a folder; honours "Range: bytes=N-" when ``ranges`` is on; records requests."""

    ranges = False
    log: list = []

    def log_message(self, *args):  # keep the test output clean
        pass

    def do_GET(self):
        type(self).log.append((self.path, self.headers.get("Range")))
        rng = self.headers.get("Range")
        if self.ranges and rng and rng.startswith("bytes=") and rng.endswith("-"):
            path = Path(self.translate_path(self.path))
            data = path.read_bytes()
            start = int(rng[len("bytes="):-1])
            if start >= len(data):
                self.send_error(416)
                return
            self.send_response(206)
            self.send_header("Content-Length", str(len(data) - start))
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
            self.end_headers()
            self.wfile.write(data[start:])
            return
        super().do_GET()


@pytest.fixture
def server(tmp_path):
    """A folder served on 127.0.0.1 (an ephemeral port) in a thread; yields (folder, base URL, handler class)."""
    upstream = tmp_path / "upstream" / "csv"
    upstream.mkdir(parents=True)
    (upstream / "abc.csv").write_bytes(b"abc")
    (upstream / "empty.csv").write_bytes(b"")
    (upstream / "nodes.csv").write_bytes(NODES)
    handler = type("H", (_Handler,), {"log": [], "ranges": False})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), partial(handler, directory=str(tmp_path / "upstream")))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield upstream, f"http://127.0.0.1:{httpd.server_address[1]}/csv", handler
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)


def _sums_file(tmp_path, sums: dict[str, str]) -> Path:
    path = tmp_path / "SUMS"
    path.write_text("".join(f"{digest}  csv/{name}\n" for name, digest in sums.items()))
    return path


def _good_sums() -> dict[str, str]:
    return {"abc.csv": SHA_ABC, "empty.csv": SHA_EMPTY, "nodes.csv": hashlib.sha256(NODES).hexdigest()}


def test_downloads_verifies_then_skips_what_is_present(server, tmp_path, capsys):
    upstream, url, handler = server
    dest = tmp_path / "trace"
    sums = _sums_file(tmp_path, _good_sums())
    assert main(["fetch-trace", str(dest), "--base-url", url, "--sums", str(sums)]) == 0
    captured = capsys.readouterr()
    assert (dest / "abc.csv").read_bytes() == b"abc" and (dest / "empty.csv").read_bytes() == b""
    assert (dest / "nodes.csv").read_bytes() == NODES
    # NODES: header 34 bytes ("sn,cpu_milli,memory_mib,gpu,model" 33 + newline) + row 34 = 68; total 3 + 0 + 68
    assert len(NODES) == 68
    assert captured.out == f"{dest}: 3 files, 71 bytes (3 downloaded); every SHA-256 matches\n"
    assert "[1/3] abc.csv: 3 bytes, downloaded, sum OK" in captured.err
    assert not list(dest.glob("*.part"))
    assert [p for p, _ in handler.log] == ["/csv/abc.csv", "/csv/empty.csv", "/csv/nodes.csv"]
    # again: everything present with the right sum, nothing requested
    handler.log.clear()
    assert main(["fetch-trace", str(dest), "--base-url", url, "--sums", str(sums), "--quiet"]) == 0
    assert capsys.readouterr().out == f"{dest}: 3 files, 71 bytes (3 already present); every SHA-256 matches\n"
    assert handler.log == []


def test_corrupted_file_is_refused_and_not_kept(server, tmp_path, capsys):
    upstream, url, _ = server
    (upstream / "nodes.csv").write_bytes(NODES.replace(b"G2", b"G3"))  # one byte changed upstream
    bad = hashlib.sha256(NODES.replace(b"G2", b"G3")).hexdigest()
    expected = hashlib.sha256(NODES).hexdigest()
    dest = tmp_path / "trace"
    sums = _sums_file(tmp_path, _good_sums())
    assert main(["fetch-trace", str(dest), "--base-url", url, "--sums", str(sums), "--quiet"]) == 1
    captured = capsys.readouterr()
    assert captured.err == (f"error: nodes.csv: SHA-256 mismatch, expected {expected}, got {bad} (downloaded from "
                            f"{url}/nodes.csv); the file was deleted, not kept\n")
    assert captured.out == ""
    assert not (dest / "nodes.csv").exists() and not (dest / "nodes.csv.part").exists()
    # the files before it were verified and stay
    assert (dest / "abc.csv").read_bytes() == b"abc"


def test_a_stale_file_with_a_wrong_sum_is_replaced(server, tmp_path):
    _, url, _ = server
    dest = tmp_path / "trace"
    dest.mkdir()
    (dest / "abc.csv").write_bytes(b"abd")
    got = fetch_trace(dest, url, _good_sums(), ["abc.csv"])
    assert [(r.name, r.status, r.sha256) for r in got] == [("abc.csv", "downloaded", SHA_ABC)]
    assert (dest / "abc.csv").read_bytes() == b"abc"


def test_a_stale_file_that_cannot_be_fetched_again_is_named(server, tmp_path):
    # fresh tester polish #18: offline, only "cannot download" was said, not that the local file
    # failed its sum (the reason it was fetched); here the server has no such file (HTTP 404)
    upstream, url, _ = server
    (upstream / "abc.csv").unlink()
    dest = tmp_path / "trace"
    dest.mkdir()
    (dest / "abc.csv").write_bytes(b"abd")
    with pytest.raises(InputError) as info:
        fetch_trace(dest, url, _good_sums(), ["abc.csv"])
    assert str(info.value) == (f"{url}/abc.csv: HTTP 404 File not found; expected the file abc.csv (the local "
                               f"{dest / 'abc.csv'} failed its SHA-256 check, expected {SHA_ABC}, which is why it "
                               "was fetched again; it is left as it was: do not use it)")
    assert (dest / "abc.csv").read_bytes() == b"abd"


def test_broken_download_resumes_with_a_range_request(server, tmp_path):
    _, url, handler = server
    handler.ranges = True
    dest = tmp_path / "trace"
    dest.mkdir()
    (dest / "nodes.csv.part").write_bytes(NODES[:40])     # 40 of 68 bytes arrived before
    (got,) = fetch_trace(dest, url, _good_sums(), ["nodes.csv"])
    assert handler.log == [("/csv/nodes.csv", "bytes=40-")]
    assert (got.status, got.size, got.downloaded) == ("resumed", 68, 28)   # 68 - 40 = 28
    assert (dest / "nodes.csv").read_bytes() == NODES and not (dest / "nodes.csv.part").exists()


def test_server_without_ranges_restarts_the_file(server, tmp_path):
    _, url, _ = server   # SimpleHTTPRequestHandler ignores Range and answers 200 with the whole file
    dest = tmp_path / "trace"
    dest.mkdir()
    (dest / "nodes.csv.part").write_bytes(b"garbage from an older try")
    (got,) = fetch_trace(dest, url, _good_sums(), ["nodes.csv"])
    assert (got.status, got.downloaded) == ("downloaded", 68)
    assert (dest / "nodes.csv").read_bytes() == NODES


def test_download_size_is_bounded(server, tmp_path):
    _, url, _ = server
    dest = tmp_path / "trace"
    with pytest.raises(InputError, match=r"nodes.csv would be 68 bytes; at most 50 are accepted"):
        fetch_trace(dest, url, _good_sums(), ["nodes.csv"], max_bytes=50)
    assert not (dest / "nodes.csv").exists()


@pytest.mark.parametrize("argv, message", [
    (["--base-url", "ftp://example.org/csv"], "--base-url 'ftp://example.org/csv': expected an http:// or https://"),
    (["--files", "nope.csv"], "--files 'nope.csv': not one of the 3 files of the sums list (e.g. abc.csv)"),
    (["--timeout", "0"], "--timeout: expected a finite number > 0"),
])
def test_bad_options_are_one_line(argv, message, server, tmp_path, capsys):
    _, url, _ = server
    sums = _sums_file(tmp_path, _good_sums())
    try:
        status = main(["fetch-trace", str(tmp_path / "t"), "--base-url", url, "--sums", str(sums), *argv])
    except SystemExit as exc:
        status = exc.code
    err = capsys.readouterr().err
    assert status == 1 and message in err and err.count("\n") == 1


def test_http_error_names_the_url(server, tmp_path, capsys):
    _, url, _ = server
    sums = _sums_file(tmp_path, {"missing.csv": SHA_ABC})
    assert main(["fetch-trace", str(tmp_path / "t"), "--base-url", url, "--sums", str(sums), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert err == f"error: {url}/missing.csv: HTTP 404 File not found; expected the file missing.csv\n"


def test_folders_in_a_sums_path_are_dropped():
    # "../../etc/passwd" names the file 'passwd' inside DIR: nothing is written outside it
    assert parse_sums(f"{SHA_ABC}  ../../etc/passwd\n", "SUMS") == {"passwd": SHA_ABC}
    assert parse_sums(f"{SHA_ABC.upper()} *csv/a.csv\n", "SUMS") == {"a.csv": SHA_ABC}   # binary-mode marker


def test_a_server_sending_more_than_announced_is_cut_off(tmp_path):
    class Endless:
        status = 200
        headers: dict = {}          # no Content-Length

        def read(self, n):
            return b"x" * n

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    with pytest.raises(InputError, match=r"a.csv is larger than 100,000 bytes; refused and deleted"):
        fetch_trace(tmp_path, "http://127.0.0.1:1/csv", {"a.csv": SHA_ABC}, max_bytes=100_000,
                    opener=lambda request, timeout: Endless())
    assert list(tmp_path.iterdir()) == []


def test_a_failed_download_leaves_no_folder_it_created(tmp_path):
    def unreachable(request, timeout):
        raise OSError(111, "Connection refused")

    dest = tmp_path / "new" / "csv"
    with pytest.raises(InputError, match=r"a.csv"):
        fetch_trace(dest, "http://127.0.0.1:1/csv", {"a.csv": SHA_ABC}, opener=unreachable)
    assert list(tmp_path.iterdir()) == []   # neither csv/ nor new/, which were not there before
    # a folder that was there before stays, empty or not
    (tmp_path / "kept").mkdir()
    with pytest.raises(InputError):
        fetch_trace(tmp_path / "kept", "http://127.0.0.1:1/csv", {"a.csv": SHA_ABC}, opener=unreachable)
    assert (tmp_path / "kept").is_dir()


@pytest.mark.parametrize("text, message", [
    (f"{SHA_ABC}  csv/..hidden\n", "SUMS:1: file name '..hidden': expected a plain file name"),
    ("not a sum line\n", "SUMS:1: expected '<64 hex digits>  <file name>'"),
    (f"{SHA_ABC}  a.csv\n{SHA_ABC}  csv/a.csv\n", "SUMS:2: a.csv is listed twice"),
    ("\n# nothing\n", "SUMS: no '<sha256>  <file>' lines"),
])
def test_sums_file_is_checked(text, message):
    with pytest.raises(InputError, match=message):
        parse_sums(text, "SUMS")


def test_sums_file_size_is_bounded(tmp_path):
    big = tmp_path / "big"
    big.write_bytes(b"#" * (1024 * 1024 + 1))
    with pytest.raises(InputError, match="larger than 1,048,576 bytes"):
        read_sums(big)


def test_shipped_sums_are_the_verified_copy_and_package_data():
    sums = shipped_sums()
    assert len(sums) == 26 and "openb_pod_list_default.csv" in sums
    assert sums["openb_pod_list_default.csv"] == "1ee7ed79c27a3b0861cda8ddba86a004c6aba904caafa329a76ae93ca63834a8"
    shared = ROOT.parent / "shared" / "data" / "alibaba-gpu-2023" / "SHA256SUMS"
    if shared.is_file():
        assert sums == parse_sums(shared.read_text(), str(shared))
    # the sums file is installed with the package (pyproject's package-data patterns)
    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["*"]
    assert any(fnmatch.fnmatch(SUMS_RESOURCE, p) for p in patterns)
    assert DEFAULT_BASE_URL == ("https://raw.githubusercontent.com/alibaba/clusterdata/"
                                "7a6c496e4f4b6ce6150be8f881cb051bf2abff42/cluster-trace-gpu-v2023/csv")


def test_shipped_sums_match_the_real_trace(alibaba_csv):
    # the course's copy of the trace (when present) passes the shipped sums, file by file
    for name, digest in shipped_sums().items():
        assert hashlib.sha256((alibaba_csv / name).read_bytes()).hexdigest() == digest, name


def test_checksum_mismatch_is_an_input_error():
    exc = ChecksumMismatch("a.csv", "0" * 64, "1" * 64, "http://h/a.csv")
    assert isinstance(exc, InputError) and "\n" not in str(exc)


@pytest.mark.parametrize("url, message", [
    ("http://[::1", "--base-url 'http://[::1': malformed (Invalid IPv6 URL)"),
    ("http://127.0.0.1:abc/", "--base-url 'http://127.0.0.1:abc/': malformed (Port could not be cast"),
    ("http://127.0.0.1:99999/", "malformed (Port out of range 0-65535)"),
    ("http://127.0.0.1:1/a b/", "contains a space or control character (quote spaces as %20)"),
    ("http://127.0.0.1:1/a\nb/", "contains a space or control character"),
    ("http://user:secret@127.0.0.1:1/csv", "--base-url 'http://***@127.0.0.1:1/csv': has a user:password@ part"),
    ("http://:80/", "--base-url 'http://:80/': expected an http:// or https:// URL"),
])
def test_malformed_base_urls_are_one_line(url, message, tmp_path, capsys):
    # before: ValueError / http.client.InvalidURL tracebacks, "internal error", status 3
    sums = _sums_file(tmp_path, _good_sums())
    assert main(["fetch-trace", str(tmp_path / "t"), "--base-url", url, "--sums", str(sums), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "secret" not in err
    assert not (tmp_path / "t").exists()          # refused before the folder is made


def test_a_folder_in_the_way_is_one_line(server, tmp_path, capsys):
    _, url, _ = server
    dest = tmp_path / "trace"
    (dest / "abc.csv").mkdir(parents=True)
    sums = _sums_file(tmp_path, _good_sums())
    assert main(["fetch-trace", str(dest), "--base-url", url, "--sums", str(sums), "--files", "abc.csv",
                 "--quiet"]) == 1
    err = capsys.readouterr().err
    assert err == (f"error: {dest / 'abc.csv'}: is a folder; expected a regular file or nothing there (remove it "
                   "and run again; nothing was written through it)\n")


def test_a_symlinked_part_is_refused_and_its_target_untouched(server, tmp_path):
    # the tester's case: DIR/x.part -> DIR/victim was appended to through the link, and the
    # victim kept the foreign bytes after the checksum mismatch
    _, url, _ = server
    dest = tmp_path / "trace"
    dest.mkdir()
    victim = tmp_path / "victim"
    victim.write_text("secret\n")
    (dest / "nodes.csv.part").symlink_to(victim)
    with pytest.raises(InputError, match=r"nodes.csv.part: is a symbolic link; expected a regular file"):
        fetch_trace(dest, url, _good_sums(), ["nodes.csv"])
    assert victim.read_text() == "secret\n" and (dest / "nodes.csv.part").is_symlink()
    # a symlinked trace file is refused the same way (not hashed through the link, not replaced)
    (dest / "nodes.csv.part").unlink()
    (dest / "nodes.csv").symlink_to(victim)
    with pytest.raises(InputError, match=r"nodes.csv: is a symbolic link"):
        fetch_trace(dest, url, _good_sums(), ["nodes.csv"])
    assert victim.read_text() == "secret\n"


def test_a_trickling_server_is_stopped_at_the_file_deadline(tmp_path):
    class Trickle:
        status = 200
        headers = {"Content-Length": "1000"}

        def read1(self, n):
            return b"x"                # one byte per read, forever

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    ticks = iter(range(0, 10**6, 2))   # the clock advances 2 s per look (the tester's 1 byte every 2 s)
    # deadline = 60 s + 1000 bytes / 10,000 bytes/s = 60.1 s; start at 0; after byte n the clock
    # reads 2n, and 2n > 60.1 first at n = 31
    with pytest.raises(InputError, match=r"a.csv took over 60 s .* stopped after 31 bytes; the server is too slow"):
        fetch_trace(tmp_path, "http://127.0.0.1:1/csv", {"a.csv": SHA_ABC},
                    opener=lambda request, timeout: Trickle(), clock=lambda: next(ticks))
    assert (tmp_path / "a.csv.part").stat().st_size == 31      # kept, so a run against a better mirror resumes
    assert not (tmp_path / "a.csv").exists()


def test_file_deadline():
    # 60 s + 710,698 bytes / 10,000 B/s = 131.0698 s; unknown size: 60 + 33,554,432 / 10,000 = 3415.4432 s
    from lab01_cluster_sim.fetch import file_deadline_s

    assert file_deadline_s(710_698) == pytest.approx(131.0698)
    assert file_deadline_s(None) == pytest.approx(3415.4432)


def test_an_opener_refusing_the_url_is_one_line(tmp_path):
    import http.client

    def opener(request, timeout):
        raise http.client.InvalidURL("nonnumeric port: 'x'")

    with pytest.raises(InputError, match=r"^http://127.0.0.1:1/csv/a.csv: cannot download a.csv: nonnumeric port"):
        fetch_trace(tmp_path, "http://127.0.0.1:1/csv", {"a.csv": SHA_ABC}, opener=opener)
