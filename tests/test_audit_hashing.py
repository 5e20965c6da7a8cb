from __future__ import annotations

import hashlib
import os

from nexagauge_local.audit import hashing
from nexagauge_local.audit.hashing import (
    HashMemo,
    combined_digest,
    hash_tokenizer,
    hash_weights,
    sha256_file,
    tokenizer_files_in,
)
from tests.test_audit_helpers import make_weights


def test_streaming_hash_matches_hashlib(tmp_path, monkeypatch):
    monkeypatch.setattr(hashing, "CHUNK", 7)  # force many chunks
    data = os.urandom(1000)
    p = tmp_path / "f.bin"
    p.write_bytes(data)
    assert sha256_file(p) == hashlib.sha256(data).hexdigest()


def test_memo_hashes_an_unchanged_file_once(tmp_path, monkeypatch):
    calls = []
    real = hashing.sha256_file
    monkeypatch.setattr(hashing, "sha256_file", lambda p: calls.append(p) or real(p))
    f = tmp_path / "w.bin"
    f.write_bytes(b"weights" * 100)
    memo = HashMemo(tmp_path / "cache")
    first = memo.sha256(f)
    assert memo.sha256(f) == first
    assert len(calls) == 1 and memo.misses == 1
    memo.save()
    # a new process (new memo object) reads the remembered hash from disk
    memo2 = HashMemo(tmp_path / "cache")
    assert memo2.sha256(f) == first
    assert len(calls) == 1 and memo2.misses == 0


def test_memo_rehashes_after_mtime_change(tmp_path):
    f = tmp_path / "w.bin"
    f.write_bytes(b"aaaa")
    memo = HashMemo(tmp_path / "cache")
    old = memo.sha256(f)
    # same size, new content, new mtime: must be re-read
    f.write_bytes(b"bbbb")
    st = f.stat()
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    new = memo.sha256(f)
    assert memo.misses == 2
    assert new != old and new == hashlib.sha256(b"bbbb").hexdigest()


def test_memo_rehashes_a_replaced_file_with_the_same_size_and_mtime(tmp_path):
    """A new download renamed over the old weights, mtime kept (cp -p, tar): only the inode
    says it is another file."""
    f = tmp_path / "w.bin"
    f.write_bytes(b"aaaa")
    memo = HashMemo(tmp_path / "cache")
    old = memo.sha256(f)
    st = f.stat()
    new_file = tmp_path / "w.bin.new"
    new_file.write_bytes(b"bbbb")
    os.utime(new_file, ns=(st.st_atime_ns, st.st_mtime_ns))
    keep_inode = tmp_path / "keep"  # the old inode stays alive, so it cannot be reused
    os.link(f, keep_inode)
    os.replace(new_file, f)
    assert f.stat().st_size == st.st_size and f.stat().st_mtime_ns == st.st_mtime_ns
    assert memo.sha256(f) == hashlib.sha256(b"bbbb").hexdigest() != old
    assert memo.misses == 2


def test_a_single_weights_file_is_hashed_once_across_runs(tmp_path, monkeypatch):
    """The demo judge is one GGUF: its hash must reach the memo file like a folder's do (it was
    re-hashed on every run), and a same-size rewrite with a new mtime is hashed again."""
    calls = []
    real = hashing.sha256_file
    monkeypatch.setattr(hashing, "sha256_file", lambda p: calls.append(p) or real(p))
    g = tmp_path / "model.gguf"
    g.write_bytes(b"GGUF" + b"a" * 60)
    first = hash_weights(g, HashMemo(tmp_path / "cache"))
    again = hash_weights(g, HashMemo(tmp_path / "cache"))  # a new run, a new memo object
    assert again == first and len(calls) == 1
    st = g.stat()
    with g.open("r+b") as fh:  # same size, new content, new mtime
        fh.seek(4)
        fh.write(b"b" * 60)
    os.utime(g, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    changed = hash_weights(g, HashMemo(tmp_path / "cache"))
    assert len(calls) == 2
    assert changed[0].sha256 == hashlib.sha256(b"GGUF" + b"b" * 60).hexdigest() != first[0].sha256


def test_memo_survives_a_corrupt_memo_file(tmp_path):
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / hashing.MEMO_FILE).write_text("{not json")
    f = tmp_path / "x"
    f.write_bytes(b"x")
    memo = HashMemo(tmp_path / "cache")
    assert memo.sha256(f) == hashlib.sha256(b"x").hexdigest()
    memo.save()
    assert HashMemo(tmp_path / "cache").sha256(f) == hashlib.sha256(b"x").hexdigest()


def test_hash_weights_folder_sorted_and_complete(tmp_path):
    w = make_weights(tmp_path / "judge")
    (w / "sub").mkdir()
    (w / "sub" / "extra.bin").write_bytes(b"1")
    files = hash_weights(w)
    names = [x.file for x in files]
    assert names == sorted(names)
    assert "sub/extra.bin" in names and "model.safetensors" in names
    st = next(x for x in files if x.file == "model.safetensors")
    assert st.size == 256 * 64
    assert st.sha256 == sha256_file(w / "model.safetensors")


def test_hash_weights_with_memo_reads_each_file_once(tmp_path):
    w = make_weights(tmp_path / "judge")
    memo = HashMemo(tmp_path / "cache")
    a = hash_weights(w, memo)
    assert memo.misses == len(a)
    memo2 = HashMemo(tmp_path / "cache")  # hash_weights saved the memo
    assert hash_weights(w, memo2) == a
    assert memo2.misses == 0


def test_hash_weights_single_file(tmp_path):
    g = tmp_path / "model.gguf"
    g.write_bytes(b"GGUF....")
    [only] = hash_weights(g)
    assert only.file == "model.gguf" and only.size == 8


def test_combined_digest_is_order_independent(tmp_path):
    w = make_weights(tmp_path / "judge")
    files = hash_weights(w)
    assert combined_digest(files) == combined_digest(list(reversed(files)))
    assert combined_digest(files) == combined_digest({f.file: f.sha256 for f in files})


def test_tokenizer_and_chat_template_hashes(tmp_path):
    w = make_weights(tmp_path / "judge")
    files = tokenizer_files_in(w)
    assert {f.name for f in files} == {"tokenizer.json", "tokenizer_config.json"}
    tok, tmpl = hash_tokenizer(files, "{{ messages }}")
    assert tmpl == hashlib.sha256(b"{{ messages }}").hexdigest()
    tok2, _ = hash_tokenizer(files, "other")
    assert tok2 == tok
    (w / "tokenizer.json").write_text("{}")
    assert hash_tokenizer(files, None) != (tok, None)
    assert hash_tokenizer([], None) == (None, None)
    assert tokenizer_files_in(tmp_path / "nope.gguf") == []
