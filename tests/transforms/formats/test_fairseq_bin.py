"""transforms.formats.fairseq_bin: the `.idx` bytes are fairseq 0.12.2's MMapIndexedDataset
index, spelt out field by field here from its documented layout; the ids map as the module
says; the job's `.fairseq` shard reads back whole and refuses what is not one."""

import io
import struct

import numpy as np
import pytest

from transforms.formats import fairseq_bin


def test_index_is_fairseqs_mmap_index_byte_by_byte():
    data = fairseq_bin.index_bytes(np.array([3, 1, 4]), np.dtype(np.uint16))
    assert data[:9] == b"MMIDIDX\x00\x00"
    assert struct.unpack_from("<QBQ", data, 9) == (1, 8, 3)  # version, uint16's code, count
    assert np.frombuffer(data, np.int32, 3, 26).tolist() == [3, 1, 4]
    assert np.frombuffer(data, np.int64, 3, 38).tolist() == [0, 6, 8]  # bytes, uint16
    assert len(data) == 26 + 3 * 4 + 3 * 8
    dtype, sizes, pointers = fairseq_bin.read_index(
        fairseq_bin.index_bytes(np.array([2, 5]), np.dtype(np.uint32)))
    assert (dtype, sizes.tolist(), pointers.tolist()) == (np.dtype(np.uint32), [2, 5], [0, 8])
    with pytest.raises(ValueError, match="not a fairseq"):
        fairseq_bin.read_index(b"TNTIDX\x00\x00" + bytes(40))


def test_ids_map_to_fairseqs_dictionary():
    subword = fairseq_bin.FairseqIds(10, pad_id=0, eos_ids=[1])
    assert subword.map(np.array([5, 2, 9, 1])).tolist() == [7, 4, 11, 2]  # id + 2, EOS = 2
    assert (subword.dictionary_size, subword.append_eos) == (16, False)  # 12, padded
    assert subword.dtype == np.uint16
    word = fairseq_bin.FairseqIds(6, pad_id=2, eos_ids=[])  # <unk> <s> </s> a b c
    assert word.append_eos and word.map(np.array([0, 1, 3, 5])).tolist() == [4, 5, 6, 8]
    assert fairseq_bin.FairseqIds(70000, 0, [1]).dtype == np.uint32
    with pytest.raises(ValueError, match="outside the vocabulary"):
        subword.map(np.array([10]))


def test_dict_lines_keep_entries_fairseq_reads_as_one_token():
    ids = fairseq_bin.FairseqIds(7, pad_id=0, eos_ids=[1])
    entries = {2: "the_", 3: "a b", 4: "", 5: "<unk>", 6: "the_"}
    text = fairseq_bin.dict_lines(ids, entries.get, np.array([0, 0, 9, 8, 7, 6, 5]))
    assert text.splitlines() == ["the_ 9", "<t2t:3> 8", "<t2t:4> 7", "<t2t:5> 6",
                                 "<t2t:6> 5"] + ["madeupword%04d 0" % k for k in range(7)]


@pytest.mark.parametrize("real", [0, 3, 4, 5, 12, 65530])
def test_dict_is_padded_as_fairseq_preprocess_pads_it(real):
    # fairseq's Dictionary.pad_to_multiple_(8): the 4 specials count, madeupwords follow
    ids = fairseq_bin.FairseqIds(real + 2, pad_id=0, eos_ids=[1])
    lines = fairseq_bin.dict_lines(ids, lambda i: "w%d" % i, np.zeros(real + 2)).splitlines()
    padded = -(-(4 + real) // 8) * 8
    assert len(lines) + 4 == padded == ids.dictionary_size
    assert lines[:real] == ["w%d 0" % (i + 2) for i in range(real)]
    assert lines[real:] == ["madeupword%04d 0" % k for k in range(padded - 4 - real)]
    assert ids.dtype == (np.uint16 if padded < 65500 else np.uint32)


def test_a_madeupword_the_vocabulary_holds_is_skipped():
    ids = fairseq_bin.FairseqIds(3, pad_id=0, eos_ids=[1])
    lines = fairseq_bin.dict_lines(ids, {2: "madeupword0000"}.get, np.zeros(3)).splitlines()
    assert lines == ["madeupword0000 0", "madeupword0001 0", "madeupword0002 0",
                     "madeupword0003 0"]


def test_shard_reads_back_every_record_in_order():
    pairs = [([5, 6, 1], [7, 1]), ([1], [8, 9, 10, 1]), ([], [1])]
    out = io.BytesIO()
    assert fairseq_bin.write_shard(out, iter(pairs)) == 3
    data = out.getvalue()
    assert data.endswith(struct.pack("<Q", 3) + b"T2TFSQ01")
    assert [(r["inputs"], r["targets"]) for r in fairseq_bin.shard_pairs(data)] == \
        [(list(a), list(b)) for a, b in pairs]
    inputs, in_sizes, targets, tgt_sizes = fairseq_bin.read_shard(data)
    assert inputs.tolist() == [5, 6, 1, 1] and tgt_sizes.tolist() == [2, 4, 1]
    empty = io.BytesIO()
    assert fairseq_bin.write_shard(empty, iter([])) == 0
    assert list(fairseq_bin.shard_pairs(empty.getvalue())) == []
    for bad in (b"", b"x" * 40, data[:-20] + data[-16:]):
        with pytest.raises(ValueError, match=".fairseq shard"):
            fairseq_bin.read_shard(bad)
