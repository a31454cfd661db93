"""Learning a GPT-2 style byte-level BPE from pre-token counts (`learn_byte_bpe`).

Learning (`learn_byte_bpe`) uses the id layout of Hugging Face `tokenizers`' byte-level BPE
trainer, so the files it writes load unchanged in `tokenizers` / `transformers`:

- ids 0..k-1: the special tokens, in the order given;
- the next 256 ids: the byte symbols, sorted by code point (this is also GPT-2's order: the
  bytes that print as themselves, then the others);
- then one id per learned token, in the order learned.

Tie-break rule of the learner: the pair with the highest count is merged; among equal counts,
the pair whose (left id, right id) is smallest (compared left id first). Ids are the layout
above, so the rule does not depend on dict order, hash seeds or the order of `word_counts`.
This is also the rule of `tokenizers`' BPE trainer.
"""

from collections.abc import Iterable, Mapping

import numpy as np

from transforms.codecs.byte_bpe import ENDOFTEXT, ByteBPE, bytes_to_unicode
from transforms.codecs.byte_bpe_merges import learn_merges

_BYTE_TO_CHAR = bytes_to_unicode()
_START_SIZE = 1 << 62  # caps the first size of the merge loop's growing arrays (tests: tiny)


def learn_byte_bpe(word_counts: Mapping[str, int], vocab_size: int,
                   special_tokens: Iterable[str] = (ENDOFTEXT,), min_frequency: int = 2
                   ) -> ByteBPE:
    """Learns a byte-level BPE from pre-token counts.

    word_counts: pre-token (as `pretokenize` returns it) -> count, over the whole sample.
    vocab_size: target size including the special tokens and the 256 byte symbols. Learning
    stops earlier when no adjacent pair occurs `min_frequency` times or more.

    Ids and tie-break: see the module docstring. As in `tokenizers`, a merge whose result is
    already a token (the same string reached by two different merges) is recorded in the merges
    but adds no vocabulary entry.

    Algorithm (compiled, `byte_bpe_merges.learn_merges`): pair counts and a pair -> words
    index are built once; a max-heap of (count, pair) with lazy invalidation gives the next
    merge; a merge visits only the words holding the pair, merges them in place and updates the
    counts of the pairs next to each merged occurrence. This function turns the pre-tokens
    into one array of symbol ids and the merged ids back into strings.
    """
    specials = list(dict.fromkeys(special_tokens))
    alphabet = sorted(_BYTE_TO_CHAR.values())
    clash = [t for t in specials if t in alphabet or not t]
    if clash:
        raise ValueError("special token %r is empty or a byte symbol" % clash[0])
    id_to_token = specials + alphabet
    if vocab_size < len(id_to_token):
        raise ValueError(
            "vocab_size %d is smaller than %d special tokens + 256 byte symbols"
            % (vocab_size, len(specials))
        )
    token_to_id = {t: i for i, t in enumerate(id_to_token)}
    byte_id = [token_to_id[_BYTE_TO_CHAR[b]] for b in range(256)]
    min_count = max(int(min_frequency), 1)

    # Words: the distinct pre-tokens of 2 bytes or more, as one flat array of symbol ids. Their
    # order changes nothing: counts are sums, and ties are broken on ids.
    datas = []
    counts = []
    for piece, count in word_counts.items():
        if count < 0:
            raise ValueError("negative count %r for %r" % (count, piece))
        if count:
            data = piece.encode("utf-8")
            if len(data) > 1:
                datas.append(data)
                counts.append(count)
    lengths = np.fromiter(map(len, datas), np.int32, len(datas))
    starts = np.zeros(len(datas), np.int64)
    if len(datas) > 1:
        np.cumsum(lengths[:-1], out=starts[1:])
    codes = np.asarray(byte_id, np.int32)[np.frombuffer(b"".join(datas), np.uint8)]
    del datas

    # the bytes of the ids so far: a special token's, if it is written in byte symbols (a merge
    # can reach it), else none (-1); then the 256 byte symbols
    char_to_byte = {c: b for b, c in _BYTE_TO_CHAR.items()}
    token_bytes = [bytes(char_to_byte[c] for c in t) if all(c in char_to_byte for c in t)
                   else None for t in specials] + [bytes([char_to_byte[c]]) for c in alphabet]
    tok_len = np.array([-1 if t is None else len(t) for t in token_bytes], np.int64)
    tok_start = np.zeros(len(token_bytes), np.int64)
    np.cumsum(np.maximum(tok_len, 0)[:-1], out=tok_start[1:])
    tok_pool = np.frombuffer(b"".join(t or b"" for t in token_bytes), np.uint8).astype(np.int32)

    lefts, rights, news = learn_merges(
        codes, starts, lengths, np.array(counts, np.int64), tok_pool, tok_start, tok_len,
        vocab_size, min_count, max(vocab_size, 2).bit_length(), _START_SIZE)
    merges: list[tuple[str, str]] = []
    for a, b, new in zip(lefts.tolist(), rights.tolist(), news.tolist()):
        token = id_to_token[a] + id_to_token[b]
        if new == len(id_to_token):
            id_to_token.append(token)
        elif id_to_token[new] != token:
            raise AssertionError("merge %d: id %d is %r, not %r"
                                 % (len(merges), new, id_to_token[new], token))
        merges.append((id_to_token[a], id_to_token[b]))

    encoder = {t: i for i, t in enumerate(id_to_token)}
    return ByteBPE(encoder, merges, {t: i for i, t in enumerate(specials)})
