"""fetch-model against a loopback stand-in for the Hugging Face hub (no machine here reaches the
real one): files land, sha256s are recorded and equal the served bytes', the result loads, and
an unreachable hub is a clear error that leaves nothing behind."""

from __future__ import annotations

import hashlib
import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from compiler.gpt2.checkpoint import CheckpointError, load_model
from compiler.gpt2.fetch import PINNED_REVISION, REPO_ID, FetchError, fetch_model
from compiler.gpt2.synth import synthesize_checkpoint
from harness import cli

FILES = ("config.json", "model.safetensors", "vocab.json", "merges.txt")


class FakeHub:
    """Serves ``files`` at the hub's resolve URLs for one repository and revision, with the headers
    huggingface_hub requires (X-Repo-Commit, ETag, Content-Length) and its error codes. ``faults`` maps a
    file name to "500" (every request for it is an internal server error), "truncate" (its body stops
    after 1000 bytes and the connection closes, as when a download is cut short), "corrupt" (a byte of
    the body flipped, its length and stated hash unchanged) or "git-etag" (the ETag a git blob id, as the
    hub gives for a file not kept in git-lfs)."""

    def __init__(self, files: dict[str, bytes], revision: str = PINNED_REVISION, faults: dict[str, str] | None = None):
        self.files, self.revision, self.requests, self.faults = files, revision, [], faults or {}
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output clean
                pass

            def do_HEAD(self):
                self._respond(body=False)

            def do_GET(self):
                self._respond(body=True)

            def _respond(self, body: bool):
                hub.requests.append((self.command, self.path))
                prefix = f"/{REPO_ID}/resolve/"
                if not self.path.startswith(prefix):
                    return self._error(404, "RepoNotFound")
                revision, _, filename = self.path[len(prefix):].partition("/")
                if revision != hub.revision:
                    return self._error(404, "RevisionNotFound")
                if filename not in hub.files:
                    return self._error(404, "EntryNotFound")
                fault = hub.faults.get(filename)
                if fault == "500":
                    return self._error(500, "InternalError")
                data = hub.files[filename]
                etag = hashlib.sha256(data).hexdigest() if fault != "git-etag" else hashlib.sha1(data).hexdigest()
                if fault == "corrupt":
                    data = data[:-1] + bytes([data[-1] ^ 0xFF])
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.send_header("ETag", f'"{etag}"')
                self.send_header("X-Repo-Commit", hub.revision)
                self.send_header("Accept-Ranges", "bytes")
                self.end_headers()
                if body and fault == "truncate":
                    self.wfile.write(data[:1000])
                    self.close_connection = True
                elif body:
                    self.wfile.write(data)

            def _error(self, status: int, code: str):
                self.send_response(status)
                self.send_header("X-Error-Code", code)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def served_files(tmp_path_factory) -> dict[str, bytes]:
    source = tmp_path_factory.mktemp("hub-source") / "gpt2"
    synthesize_checkpoint(source, config="tiny", seed=7)
    return {name: (source / name).read_bytes() for name in FILES}


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def test_fetch_lands_files_records_hashes_and_loads(tmp_path, served_files):
    dest = tmp_path / "models" / "gpt2"
    with FakeHub(served_files) as hub:
        info = fetch_model(dest, endpoint=hub.url)
    for name in FILES:
        assert (dest / name).read_bytes() == served_files[name]
    manifest = json.loads((dest / "parity-checkpoint.json").read_text())
    assert manifest["sha256"] == {name: hashlib.sha256(served_files[name]).hexdigest() for name in FILES}
    assert manifest["revision"] == PINNED_REVISION and manifest["source"] == "huggingface"
    assert info.sha256 == hashlib.sha256(served_files["model.safetensors"]).hexdigest()
    assert info.name == "gpt2@" + PINNED_REVISION[:12]
    # Every request asked for the pinned revision of the right repository.
    assert {path for _, path in hub.requests} == {f"/{REPO_ID}/resolve/{PINNED_REVISION}/{n}" for n in FILES}
    # Only the checkpoint files land (no huggingface_hub metadata folders, no staging leftovers).
    assert sorted(p.name for p in dest.iterdir()) == sorted([*FILES, "parity-checkpoint.json"])
    assert [p.name for p in dest.parent.iterdir()] == ["gpt2"]
    model = load_model(dest)
    assert model.config.n_layer == 2 and model.params.wte.shape == (50257, 48)
    assert model.params.wte.dtype == np.float32
    assert model.checkpoint == info


def test_cli_uses_hf_endpoint_env(tmp_path, served_files, monkeypatch, capsys):
    dest = tmp_path / "gpt2"
    with FakeHub(served_files) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        assert cli.main(["fetch-model", str(dest)]) == 0
    out = capsys.readouterr().out
    assert hashlib.sha256(served_files["model.safetensors"]).hexdigest() in out
    assert (dest / "model.safetensors").read_bytes() == served_files["model.safetensors"]


def test_offline_is_a_clear_error_and_leaves_nothing(tmp_path):
    url = closed_port_url()
    with pytest.raises(FetchError, match=r"cannot reach the Hugging Face hub at http://127\.0\.0\.1:\d+.*parity synth-model"):
        fetch_model(tmp_path / "gpt2", endpoint=url)
    assert list(tmp_path.iterdir()) == []


def test_offline_cli_exit_code_2(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HF_ENDPOINT", closed_port_url())
    assert cli.main(["fetch-model", str(tmp_path / "gpt2")]) == 2
    err = capsys.readouterr().err
    assert "cannot reach the Hugging Face hub" in err and "parity synth-model" in err


def test_unknown_revision_is_reported(tmp_path, served_files):
    with FakeHub(served_files) as hub:
        with pytest.raises(FetchError, match="revision 0{40} of openai-community/gpt2 not found"):
            fetch_model(tmp_path / "gpt2", revision="0" * 40, endpoint=hub.url)
    assert list(tmp_path.iterdir()) == []


def test_missing_file_on_hub_is_reported(tmp_path, served_files):
    files = {k: v for k, v in served_files.items() if k != "merges.txt"}
    with FakeHub(files) as hub:
        with pytest.raises(FetchError, match="has no file merges.txt"):
            fetch_model(tmp_path / "gpt2", endpoint=hub.url)
    assert list(tmp_path.iterdir()) == []


def test_invalid_download_never_lands(tmp_path, served_files):
    files = dict(served_files, **{"model.safetensors": served_files["model.safetensors"][:-100]})
    with FakeHub(files) as hub:
        with pytest.raises(CheckpointError, match="corrupt or truncated safetensors"):
            fetch_model(tmp_path / "gpt2", endpoint=hub.url)
    assert list(tmp_path.iterdir()) == []


def test_a_download_that_does_not_hash_to_the_hubs_sha256_never_lands(tmp_path, served_files):
    with FakeHub(served_files, faults={"model.safetensors": "corrupt"}) as hub:
        with pytest.raises(FetchError, match="model.safetensors of openai-community/gpt2@[0-9a-f]{40} downloaded "
                                             "with sha256 [0-9a-f]{64}, but the hub states "
                                             + hashlib.sha256(served_files["model.safetensors"]).hexdigest()):
            fetch_model(tmp_path / "gpt2", endpoint=hub.url)
    assert list(tmp_path.iterdir()) == []


def test_a_file_whose_etag_is_a_git_blob_id_is_not_hash_checked(tmp_path, served_files):
    """The hub's ETag of a small file kept in git is its blob id, not a sha256 of the bytes: no check."""
    with FakeHub(served_files, faults={"config.json": "git-etag"}) as hub:
        fetch_model(tmp_path / "gpt2", endpoint=hub.url)
    assert (tmp_path / "gpt2" / "config.json").read_bytes() == served_files["config.json"]


def test_existing_destination_is_not_overwritten(tmp_path, served_files):
    dest = tmp_path / "gpt2"
    dest.mkdir()
    (dest / "keep.txt").write_text("mine")
    with FakeHub(served_files) as hub:
        with pytest.raises(CheckpointError, match="already exists"):
            fetch_model(dest, endpoint=hub.url)
        assert hub.requests == []
        # --force deletes what DIR holds, so only when it is a checkpoint (an old download, say)
        with pytest.raises(CheckpointError, match="no parity-checkpoint.json or config.json, so it is not a checkpoint"):
            fetch_model(dest, endpoint=hub.url, overwrite=True)
        assert hub.requests == [] and (dest / "keep.txt").read_text() == "mine"
        (dest / "config.json").write_text("{}")
        fetch_model(dest, endpoint=hub.url, overwrite=True)
    assert not (dest / "keep.txt").exists()
    assert (dest / "model.safetensors").read_bytes() == served_files["model.safetensors"]


@pytest.fixture
def no_retry_wait(monkeypatch):
    """huggingface_hub retries a 5xx five times with back-off (23 s); the retries still happen, instantly."""
    import huggingface_hub.utils._http as hub_http

    monkeypatch.setattr(hub_http.time, "sleep", lambda seconds: None)


def test_server_error_says_the_hub_failed_not_that_the_file_is_missing(tmp_path, served_files, monkeypatch,
                                                                        capsys, no_retry_wait):
    with FakeHub(served_files, faults={"config.json": "500"}) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        assert cli.main(["fetch-model", str(tmp_path / "gpt2")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"parity fetch-model: error: cannot reach the Hugging Face hub at {hub.url} (")
    assert "500" in err and "has no file" not in err and "internal error" not in err
    assert err.endswith("; use `parity synth-model DIR` for an offline synthetic checkpoint\n")
    assert err.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


def test_download_cut_short_is_a_download_failure(tmp_path, served_files, monkeypatch, capsys):
    with FakeHub(served_files, faults={"model.safetensors": "truncate"}) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        assert cli.main(["fetch-model", str(tmp_path / "gpt2")]) == 2
    err = capsys.readouterr().err
    size = len(served_files["model.safetensors"])
    assert err == (f"parity fetch-model: error: downloading model.safetensors from {hub.url} failed: "
                   f"RemoteProtocolError: peer closed connection without sending complete message body "
                   f"(received 1000 bytes, expected {size})\n")
    assert list(tmp_path.iterdir()) == []


def test_corrupt_download_names_the_file_in_dir(tmp_path, served_files, monkeypatch, capsys):
    files = dict(served_files, **{"model.safetensors": served_files["model.safetensors"][:-100]})
    dest = tmp_path / "gpt2"
    with FakeHub(files) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        assert cli.main(["fetch-model", str(dest)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"parity fetch-model: error: the download is not a valid checkpoint: "
                          f"{dest / 'model.safetensors'}: corrupt or truncated safetensors file (")
    assert ".tmp-" not in err


def test_stale_fetch_staging_is_swept(tmp_path, served_files):
    import os
    import time

    stale = tmp_path / ".gpt2.tmp-dead"
    (stale / "checkpoint").mkdir(parents=True)
    os.utime(stale, (time.time() - 7200, time.time() - 7200))
    with FakeHub(served_files) as hub:
        fetch_model(tmp_path / "gpt2", endpoint=hub.url)
    assert [p.name for p in tmp_path.iterdir()] == ["gpt2"]
