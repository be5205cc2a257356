import gzip
import hashlib

import pytest

from course.data import (BOS, EOS, UNK, DataError, Vocab, as_characters, encode, first_tokens, make_batch,
                         make_batches, read_sentences, shuffled, split_long, tokens_sha256)
from course.files import sha256_of, write_atomic


def test_read_txt_and_gz_give_the_same_sentences(tmp_path):
    text = "the cat sat\n\n a dog  ran \n"
    (tmp_path / "a.txt").write_text(text, encoding="utf-8")
    with gzip.open(tmp_path / "a.txt.gz", "wt", encoding="utf-8") as f:
        f.write(text)
    expected = [["the", "cat", "sat"], ["a", "dog", "ran"]]
    assert read_sentences(tmp_path / "a.txt") == expected
    assert read_sentences(tmp_path / "a.txt.gz") == expected


def test_missing_file_names_the_path_and_the_fix(tmp_path):
    with pytest.raises(FileNotFoundError, match="nowhere.txt.*make-corpus"):
        read_sentences(tmp_path / "nowhere.txt")


def test_empty_file_is_refused(tmp_path):
    (tmp_path / "empty.txt").write_text("\n  \n")
    with pytest.raises(DataError, match="no sentences"):
        read_sentences(tmp_path / "empty.txt")


def test_non_utf8_names_the_line(tmp_path):
    (tmp_path / "latin.txt").write_bytes("ok line\ncaf\xe9 au lait\n".encode("latin-1"))
    with pytest.raises(DataError, match="not UTF-8.*line 2"):
        read_sentences(tmp_path / "latin.txt")


def test_vocab_specials_frequency_order_and_cap():
    sents = [["b", "a", "b"], ["c", "b", "a"], ["d"]]
    v = Vocab.build(sents, max_size=5)
    assert v.tokens == [UNK, BOS, EOS, "b", "a"]
    assert v.index("d") == v.unk and v.index("b") == 3 and v.token(4) == "a"
    assert Vocab.build(sents, min_count=2).tokens[3:] == ["b", "a"]


def test_vocab_save_load_roundtrip(tmp_path):
    v = Vocab.build([["x", "y", "x"]])
    v.save(tmp_path / "v.json")
    assert Vocab.load(tmp_path / "v.json").tokens == v.tokens


def test_encode_counts_unknown_words_and_refuses_a_foreign_vocabulary():
    v = Vocab.build([["a", "b", "c"]])
    ids, n_unk = encode([["a", "z", UNK]], v)
    assert ids == [[v.index("a"), v.unk, v.unk]] and n_unk == 1   # a literal <unk> is not unknown
    with pytest.raises(DataError, match="different corpus"):
        encode([["p", "q", "r", "a"]], v)


def test_batch_pads_with_eos_and_masks_padding():
    v = Vocab.build([["a", "b", "c"]])
    a, b = v.index("a"), v.index("b")
    batch = make_batch([[a, b], [b]], v)
    assert batch.inputs == [[v.bos, v.bos], [a, b], [b, v.eos]]
    assert batch.targets == [[a, b], [b, v.eos], [v.eos, v.eos]]
    assert batch.masks == [[1.0, 1.0], [1.0, 1.0], [1.0, 0.0]]
    assert batch.n_predictions == 5


def test_batches_are_length_sorted_and_cover_every_sentence_once():
    v = Vocab.build([["a"]])
    sents = [[3] * n for n in (5, 1, 3, 2, 4, 1, 6)]
    batches = make_batches(sents, v, batch_size=3)
    assert [b.size for b in batches] == [3, 3, 1]
    assert sorted(i for b in batches for i in b.order) == list(range(len(sents)))
    lengths = [len(sents[i]) for b in batches for i in b.order]
    assert lengths == sorted(lengths)


@pytest.mark.parametrize("bad", [0, -1, 2.5, None])
def test_batch_size_below_one_is_refused(bad):
    with pytest.raises(DataError, match="batch_size must be a positive integer"):
        make_batches([[3]], Vocab.build([["a"]]), bad)


def test_shuffling_is_reproducible_and_changes_with_the_epoch():
    items = list(range(20))
    assert shuffled(items, seed=3, epoch=1) == shuffled(items, seed=3, epoch=1)
    assert shuffled(items, seed=3, epoch=1) != shuffled(items, seed=3, epoch=2)
    assert sorted(shuffled(items, seed=3, epoch=1)) == items


def test_long_sentences_are_cut_into_pieces_of_the_limit():
    pieces, n_cut = split_long([["a"] * 7, ["b"] * 3], 3)
    assert n_cut == 1 and pieces == [["a"] * 3, ["a"] * 3, ["a"], ["b"] * 3]
    with pytest.raises(DataError, match="positive integer"):
        split_long([["a"]], 0)


def test_first_tokens_takes_whole_sentences_up_to_the_budget():
    sentences = [["a"] * 4, ["b"] * 4, ["c"] * 4]
    assert first_tokens(sentences, 9) == sentences[:2]
    assert first_tokens(sentences, 2) == sentences[:1]            # never nothing


def test_a_positions_cap_makes_batches_of_long_sentences_smaller():
    v = Vocab.build([["w"]])
    ids = [[3] * n for n in (2, 2, 2, 2, 9, 9, 9, 9)]
    assert [b.size for b in make_batches(ids, v, 4)] == [4, 4]
    capped = make_batches(ids, v, 4, max_positions=20)
    assert [b.size for b in capped] == [4, 2, 2]                  # 10 steps x 2 sentences = 20
    assert sorted(i for b in capped for i in b.order) == list(range(8))
    assert all(len(b.targets) * b.size <= 20 for b in capped)


def test_hashes_and_atomic_writes(tmp_path):
    assert tokens_sha256([["a", "b"]]) != tokens_sha256([["a b"]]) != tokens_sha256([["a"], ["b"]])
    assert tokens_sha256([["a"]], [["b"]]) != tokens_sha256([["a"], ["b"]])
    assert Vocab.build([["x", "y"]]).sha256() == Vocab.build([["x", "y"]]).sha256() != \
        Vocab.build([["x", "z"]]).sha256()
    write_atomic(tmp_path / "f.json", "one\n")
    write_atomic(tmp_path / "f.json", "two\n")
    assert [p.name for p in tmp_path.iterdir()] == ["f.json"] and (tmp_path / "f.json").read_text() == "two\n"
    assert sha256_of(tmp_path / "f.json") == hashlib.sha256(b"two\n").hexdigest()


def test_characters_and_one_string_per_distinct_token(tmp_path):
    assert as_characters([["ab", "c"]]) == [["a", "b", " ", "c"]]
    (tmp_path / "a.txt").write_text("the cat\nthe dog\n")
    first, second = read_sentences(tmp_path / "a.txt")
    assert first[0] is second[0]                                 # a large corpus keeps one copy
