"""Fetching, verifying, finding and reading real corpora (PTB, WikiText-2).

The PTB tests read the copy beside the repository (``../shared/data/ptb``) and
write only into pytest's temporary folders, never into the project's data/.
"""
import gzip
import hashlib
import shutil
import tarfile
import urllib.error
import zipfile

import pytest

from course import corpora, paths
from course.corpora import (PTB, CorpusError, Download, KnownCorpus, SplitFile, corpus_files,
                            fetch, main_fetch, read_corpus, read_ptb, read_wikitext)
from course.files import sha256_of

SHARED_PTB = paths.ROOT.parent / "shared" / "data" / "ptb"
needs_ptb = pytest.mark.skipif(
    not (SHARED_PTB / "train.txt").is_file(),
    reason=f"no PTB copy at {SHARED_PTB} (the development machines have one)")


def snapshot(folder):
    """Every file under ``folder`` with its bytes, to prove nothing changed."""
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def copy_ptb(target):
    target.mkdir(parents=True)
    for split in corpora.SPLITS:
        shutil.copyfile(SHARED_PTB / f"{split}.txt", target / f"{split}.txt")
    return target


# ---------------------------------------------------------------- the real PTB

@needs_ptb
def test_fetch_from_the_shared_ptb_verifies_and_places_the_files(tmp_path):
    dest = tmp_path / "external" / "ptb"
    assert fetch("ptb", SHARED_PTB, dest) == dest
    assert sorted(p.name for p in dest.iterdir()) == ["manifest.json", "test.txt", "train.txt",
                                                      "valid.txt"]
    for split in corpora.SPLITS:
        assert sha256_of(dest / f"{split}.txt") == PTB.splits[split].sha256
    assert [p.name for p in (tmp_path / "external").iterdir()] == ["ptb"]   # no temp left
    valid = read_ptb(dest / "valid.txt")
    assert len(valid) == 3370 and sum(map(len, valid)) == 70390
    assert all(s and s[0] for s in valid)                 # the leading space is gone
    assert any("<unk>" in s for s in valid)


@needs_ptb
def test_a_corrupted_copy_is_rejected_and_the_destination_left_untouched(tmp_path):
    source = copy_ptb(tmp_path / "bad")
    data = bytearray((source / "valid.txt").read_bytes())
    i = data.index(b"consumers")                          # one letter changed, same counts
    data[i] = ord("k")
    (source / "valid.txt").write_bytes(bytes(data))
    dest = tmp_path / "ptb"
    dest.mkdir()
    (dest / "train.txt").write_text("an older copy\n")
    before = snapshot(dest)

    with pytest.raises(CorpusError) as err:
        fetch("ptb", source, dest)
    message = str(err.value)
    assert "valid.txt" in message
    assert PTB.splits["valid"].sha256 in message
    assert sha256_of(source / "valid.txt") in message
    assert "train.txt" not in message.replace(str(dest), "")  # the good files are not blamed
    assert snapshot(dest) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad", "ptb"]


@needs_ptb
def test_a_truncated_copy_is_rejected_naming_file_checksum_and_counts(tmp_path):
    source = copy_ptb(tmp_path / "short")
    text = (source / "train.txt").read_bytes()
    (source / "train.txt").write_bytes(text[:len(text) // 2])
    dest = tmp_path / "ptb"
    with pytest.raises(CorpusError) as err:
        fetch("ptb", source, dest)
    message = str(err.value)
    assert "train.txt" in message and PTB.splits["train"].sha256 in message
    assert "expected 42,068 lines and 887,521 tokens" in message
    assert not dest.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["short"]


@needs_ptb
@pytest.mark.parametrize("kind", ["zip", "tgz"])
def test_fetch_from_an_archive_of_the_original_distribution(tmp_path, kind):
    archive = tmp_path / ("ptb.zip" if kind == "zip" else "simple-examples.tgz")
    if kind == "zip":                                     # short names, in a folder
        with zipfile.ZipFile(archive, "w") as z:
            for split in corpora.SPLITS:
                z.write(SHARED_PTB / f"{split}.txt", f"ptb/{split}.txt")
    else:                                                 # original names, nested, a decoy
        decoy = tmp_path / "ptb.char.train.txt"
        decoy.write_text("a _ b\n")
        with tarfile.open(archive, "w:gz") as t:
            for split in corpora.SPLITS:
                t.add(SHARED_PTB / f"{split}.txt", f"./simple-examples/data/ptb.{split}.txt")
            t.add(decoy, "./simple-examples/data/ptb.char.train.txt")
    dest = fetch("ptb", archive, tmp_path / "out")
    for split in corpora.SPLITS:
        assert sha256_of(dest / f"{split}.txt") == PTB.splits[split].sha256


@needs_ptb
def test_main_fetch_reports_success_and_failure(tmp_path, capsys):
    assert main_fetch(["ptb", "--from", str(SHARED_PTB), "--dest", str(tmp_path / "ok")]) == 0
    assert "verified" in capsys.readouterr().out
    assert main_fetch(["ptb", "--from", str(tmp_path / "nowhere"),
                       "--dest", str(tmp_path / "no")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert not (tmp_path / "no").exists()


# ---------------------------------------------------------------- a tiny fake corpus

TINY = {"train": " the cat sat\n the dog <unk>\n", "valid": " a cat\n", "test": " the end\n"}


def tiny_corpus(tmp_path, downloads=(), sha=True):
    """A two-line corpus with a table entry of its own, and its files in a folder."""
    folder = tmp_path / "tiny-src"
    folder.mkdir()
    splits = {}
    for split, text in TINY.items():
        (folder / f"tiny.{split}.txt").write_text(text)
        splits[split] = SplitFile(f"tiny.{split}.txt",
                                  sha256_of(folder / f"tiny.{split}.txt") if sha else None,
                                  text.count("\n"), len(text.split()))
    return KnownCorpus("tiny", "tiny test corpus", splits, tuple(downloads)), folder


def test_download_falls_back_to_the_next_address_and_checks_the_archive(tmp_path, monkeypatch):
    corpus, folder = tiny_corpus(tmp_path)
    archive = tmp_path / "tiny.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for split in corpora.SPLITS:
            z.write(folder / f"tiny.{split}.txt", f"tiny/tiny.{split}.txt")
    md5 = hashlib.md5(archive.read_bytes()).hexdigest()
    unreachable = "http://127.0.0.1:9/tiny.zip"
    monkeypatch.setitem(corpora.KNOWN, "tiny", KnownCorpus(
        "tiny", "tiny", corpus.splits,
        (Download(unreachable), Download(archive.as_uri(), md5=md5))))
    dest = fetch("tiny", dest=tmp_path / "dest")
    assert (dest / "train.txt").read_text() == TINY["train"]

    monkeypatch.setitem(corpora.KNOWN, "tiny", KnownCorpus(
        "tiny", "tiny", corpus.splits, (Download(archive.as_uri(), md5="0" * 32),)))
    with pytest.raises(CorpusError, match="md5 is " + md5 + ", expected 0{32}"):
        fetch("tiny", dest=tmp_path / "dest2")
    assert not (tmp_path / "dest2").exists()


def test_download_of_single_files_and_the_offline_message(tmp_path, monkeypatch):
    corpus, folder = tiny_corpus(tmp_path)
    template = folder.as_uri() + "/{name}"
    monkeypatch.setitem(corpora.KNOWN, "tiny", KnownCorpus(
        "tiny", "tiny", corpus.splits, (Download(template, "files"),)))
    dest = fetch("tiny", dest=tmp_path / "dest")
    assert read_ptb(dest / "valid.txt") == [["a", "cat"]]

    unreachable = "http://127.0.0.1:9/tiny.zip"
    monkeypatch.setitem(corpora.KNOWN, "tiny", KnownCorpus(
        "tiny", "tiny", corpus.splits, (Download(unreachable),)))
    with pytest.raises(CorpusError) as err:
        fetch("tiny", dest=tmp_path / "offline")
    assert unreachable in str(err.value) and "--from" in str(err.value)


def test_counts_alone_check_a_corpus_without_checksums(tmp_path, monkeypatch):
    corpus, folder = tiny_corpus(tmp_path, sha=False)
    monkeypatch.setitem(corpora.KNOWN, "tiny", corpus)
    dest = fetch("tiny", folder, tmp_path / "dest")
    assert (dest / "test.txt").read_text() == TINY["test"]
    (folder / "tiny.test.txt").write_text(" the\n")      # a token lost
    with pytest.raises(CorpusError, match=r"test.txt .*1 lines and 1 tokens, expected 1 lines "
                                          r"and 2 tokens"):
        fetch("tiny", folder, tmp_path / "dest")
    assert (dest / "test.txt").read_text() == TINY["test"]


def test_bad_sources_give_clear_errors(tmp_path, monkeypatch):
    corpus, folder = tiny_corpus(tmp_path)
    monkeypatch.setitem(corpora.KNOWN, "tiny", corpus)
    (folder / "tiny.valid.txt").unlink()
    with pytest.raises(CorpusError, match="no file named tiny.valid.txt or valid.txt"):
        fetch("tiny", folder, tmp_path / "dest")
    not_an_archive = tmp_path / "notes.txt"
    not_an_archive.write_text("hello\n")
    with pytest.raises(CorpusError, match="neither a folder nor"):
        fetch("tiny", not_an_archive, tmp_path / "dest")
    with pytest.raises(CorpusError, match="unknown corpus 'nope'"):
        fetch("nope", folder)
    damaged = tmp_path / "damaged.tgz"
    with tarfile.open(damaged, "w:gz") as t:
        for split in ("train", "test"):
            t.add(folder / f"tiny.{split}.txt", f"tiny.{split}.txt")
    damaged.write_bytes(damaged.read_bytes()[:60])
    with pytest.raises(CorpusError, match="damaged.tgz is damaged"):
        fetch("tiny", damaged, tmp_path / "dest")
    assert not (tmp_path / "dest").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["damaged.tgz", "notes.txt", "tiny-src"]


# ---------------------------------------------------------------- finding and reading

def test_corpus_files_resolves_folders_and_names_the_fetch_command(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "EXTERNAL_DATA", tmp_path / "external")
    with pytest.raises(CorpusError, match="python -m course data fetch wikitext-2"):
        corpus_files("wikitext-2")
    with pytest.raises(CorpusError, match="unknown corpus 'nonsense'"):
        corpus_files("nonsense")

    folder = tmp_path / "mine"
    folder.mkdir()
    for split, text in TINY.items():
        (folder / f"{split}.txt").write_text(text)
    assert corpus_files(folder) == {s: folder / f"{s}.txt" for s in corpora.SPLITS}
    assert read_corpus(str(folder), "train") == [["the", "cat", "sat"], ["the", "dog", "<unk>"]]

    ptb_dest = tmp_path / "external" / "ptb"
    ptb_dest.mkdir(parents=True)
    for split, text in TINY.items():
        (ptb_dest / f"{split}.txt").write_text(text)
    assert corpus_files("ptb")["test"] == ptb_dest / "test.txt"
    with pytest.raises(CorpusError, match="split must be one of"):
        read_corpus("ptb", "dev")


def test_the_course_corpus_is_found_compressed_or_not(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "COURSE_DATA", tmp_path / "course")
    with pytest.raises(CorpusError, match="python -m course data make-corpus"):
        corpus_files("course")
    (tmp_path / "course").mkdir()
    for split, text in TINY.items():
        (tmp_path / "course" / f"{split}.txt.gz").write_bytes(gzip.compress(text.encode()))
    (tmp_path / "course" / "test.txt").write_text(" plain text wins\n")
    assert read_corpus("course", "valid") == [["a", "cat"]]
    assert read_corpus("course", "test") == [["plain", "text", "wins"]]


WIKI = (" \n = Valkyria Chronicles = \n \n Senjō no Valkyria 3 : <unk> Chronicles .\n"
        " It met with 1 @,@ 000 copies .\n \n = = Gameplay = = \n \n Play is turn based .\n \n")


def test_wikitext_reader_keeps_headings_as_lines_and_drops_blank_lines(tmp_path):
    path = tmp_path / "wiki.valid.tokens"
    path.write_text(WIKI, encoding="utf-8")
    lines = read_wikitext(path)
    assert lines == [["=", "Valkyria", "Chronicles", "="],
                     ["Senjō", "no", "Valkyria", "3", ":", "<unk>", "Chronicles", "."],
                     ["It", "met", "with", "1", "@,@", "000", "copies", "."],
                     ["=", "=", "Gameplay", "=", "="],
                     ["Play", "is", "turn", "based", "."]]
    assert read_wikitext(path, headings=False) == [lines[1], lines[2], lines[4]]
    for split in ("train", "test"):
        (tmp_path / f"wiki.{split}.tokens").write_text(WIKI, encoding="utf-8")
    assert read_corpus(tmp_path, "valid") == lines        # original file names are found


def test_ptb_reader_splits_on_whitespace_and_strips_the_leading_space(tmp_path):
    path = tmp_path / "ptb.txt"
    path.write_text(" no it was n't black monday \n the <unk> rose N N \n")
    assert read_ptb(path) == [["no", "it", "was", "n't", "black", "monday"],
                              ["the", "<unk>", "rose", "N", "N"]]


# ---------------------------------------------------------------- WikiText-2 by its sha256

def wikitext_shaped(folder, change=False):
    """Files named as WikiText-2's, with exactly its line and token counts (so only the
    sha256 can tell them from the real ones); ``change`` alters one word of valid."""
    folder.mkdir()
    for split, expected in corpora.WIKITEXT2.splits.items():
        per_line, extra = divmod(expected.tokens, expected.lines)
        lines = [" ".join(["w"] * (per_line + (k < extra))) for k in range(expected.lines)]
        if change and split == "valid":
            lines[5] = lines[5].replace("w", "v", 1)
        (folder / expected.original).write_text("\n".join(lines) + "\n")
    return folder


def test_a_changed_wikitext_file_is_refused_by_its_sha256(tmp_path):
    source = wikitext_shaped(tmp_path / "changed", change=True)
    for split, expected in corpora.WIKITEXT2.splits.items():
        assert corpora.count_lines_tokens(source / expected.original) == (expected.lines, expected.tokens)
    dest = tmp_path / "wikitext-2"
    dest.mkdir()
    (dest / "valid.txt").write_text("the good copy\n")
    (dest / "manifest.json").write_text('{"corpus": "wikitext-2"}\n')
    before = snapshot(dest)
    with pytest.raises(CorpusError) as err:
        fetch("wikitext-2", source, dest)
    message = str(err.value)
    assert "f0737ed31fc1329026e95cb8b98e19c2a182c39c240ab909dc31abf2f8af58e8" in message      # valid's
    assert sha256_of(source / "wiki.valid.tokens") in message
    assert snapshot(dest) == before                      # the good copy and its manifest untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["changed", "wikitext-2"]


def test_a_known_sha256_decides_alone(tmp_path, monkeypatch):
    """A file whose sha256 is right is good whatever the counts in the table say."""
    corpus, folder = tiny_corpus(tmp_path)
    wrong_counts = {split: SplitFile(f.original, f.sha256, f.lines + 1, f.tokens + 1)
                    for split, f in corpus.splits.items()}
    monkeypatch.setitem(corpora.KNOWN, "tiny", KnownCorpus("tiny", "tiny", wrong_counts))
    dest = fetch("tiny", folder, tmp_path / "dest")
    assert (dest / "valid.txt").read_text() == TINY["valid"]


def test_the_offline_message_names_each_address_tried(tmp_path, monkeypatch):
    def offline(url, target):
        raise urllib.error.URLError("Temporary failure in name resolution")
    monkeypatch.setattr(corpora, "_download", offline)
    with pytest.raises(CorpusError) as err:
        fetch("ptb", dest=tmp_path / "ptb")
    message = str(err.value)
    assert "{name}" not in message
    assert "/data/ptb.train.txt: Temporary failure" in message and "simple-examples.tgz:" in message
    assert "--from" in message and not (tmp_path / "ptb").exists()


# ---------------------------------------------------------------- a text file of one's own

def test_a_single_text_file_splits_in_order_and_reads_as_characters(tmp_path):
    text = tmp_path / "mine.txt"
    text.write_text("".join(f"line {k} of text\n\n" for k in range(25)))
    assert corpora.is_text_file(text) and not corpora.is_text_file(tmp_path)
    splits = {s: read_corpus(text, s) for s in corpora.SPLITS}
    assert [len(splits[s]) for s in corpora.SPLITS] == [21, 2, 2]
    assert splits["train"][0] == ["line", "0", "of", "text"] and splits["test"][-1][1] == "24"
    assert read_corpus(text, "valid", unit="char")[0] == list("line 21 of text")
    before = corpora.corpus_sha256(text)
    text.write_text(text.read_text() + "one more\n")
    assert corpora.corpus_sha256(text) != before
    (tmp_path / "two.txt").write_text("a\nb\n")
    with pytest.raises(CorpusError, match="2 non-blank line.*at least 3"):
        read_corpus(tmp_path / "two.txt", "train")
    with pytest.raises(CorpusError, match="unit must be one of word, char"):
        read_corpus(text, "train", unit="byte")
