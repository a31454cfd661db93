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

import heapq
from array import array
from collections import defaultdict
from collections.abc import Iterable, Mapping

from transforms.codecs.byte_bpe import ENDOFTEXT, ByteBPE, bytes_to_unicode

_BYTE_TO_CHAR = bytes_to_unicode()


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

    Algorithm: pair counts and a pair -> words index are built once; a max-heap of
    (count, pair) with lazy invalidation gives the next merge; a merge visits only the words
    holding the pair and updates the counts of the pairs next to each merged occurrence.
    Words are arrays of symbol ids.
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

    # Words: byte strings sorted, so word numbers do not depend on the dict order. One-symbol
    # words have no pairs and are dropped.
    items = []
    for piece, count in word_counts.items():
        if count < 0:
            raise ValueError("negative count %r for %r" % (count, piece))
        if count:
            data = piece.encode("utf-8")
            if len(data) > 1:
                items.append((data, count))
    items.sort()

    shift = max(vocab_size, 2).bit_length()
    mask = (1 << shift) - 1
    words = []  # word number -> array of symbol ids
    counts = array("q")
    # packed (left id << shift | right id) -> count
    pair_counting: defaultdict[int, int] = defaultdict(int)
    # packed pair -> word numbers holding it (may repeat/be stale)
    holding: defaultdict[int, array[int]] = defaultdict(_int_array)
    to_id = byte_id.__getitem__
    for wi, (data, count) in enumerate(items):
        word = array("i", map(to_id, data))
        words.append(word)
        counts.append(count)
        for key in [(x << shift) | y for x, y in zip(word, word[1:])]:
            pair_counting[key] += count
            holding[key].append(wi)
    del items
    pair_counts = dict(pair_counting)
    where = dict(holding)
    del pair_counting, holding

    heap = [(-c, key) for key, c in pair_counts.items() if c >= min_count]
    heapq.heapify(heap)
    merges: list[tuple[str, str]] = []
    heappop, heappush = heapq.heappop, heapq.heappush
    while heap and len(id_to_token) < vocab_size:
        negative, key = heappop(heap)
        current = pair_counts.get(key, 0)
        if current != -negative:
            if current >= min_count:
                heappush(heap, (-current, key))
            continue
        a, b = key >> shift, key & mask
        token = id_to_token[a] + id_to_token[b]
        new = token_to_id.get(token)
        if new is None:
            new = len(id_to_token)
            id_to_token.append(token)
            token_to_id[token] = new
        merges.append((id_to_token[a], id_to_token[b]))

        replacement = array("i", (new,))
        b_left, new_left = b << shift, new << shift
        delta: defaultdict[int, int] = defaultdict(int)
        created: defaultdict[int, list[int]] = defaultdict(list)
        for wi in dict.fromkeys(where.pop(key)):
            word = words[wi]
            count = counts[wi]
            find = word.index
            last = len(word) - 1
            j = 0
            try:
                while True:
                    j = find(a, j)
                    if j < last and word[j + 1] == b:
                        # word[j], word[j+1] -> new. Left neighbour x loses (x, a) and gains
                        # (x, new); right neighbour y loses (b, y) and gains (new, y).
                        if j:
                            x = word[j - 1]
                            delta[(x << shift) | a] -= count
                            k = (x << shift) | new
                            delta[k] += count
                            created[k].append(wi)
                        if j < last - 1:
                            y = word[j + 2]
                            delta[b_left | y] -= count
                            k = new_left | y
                            delta[k] += count
                            created[k].append(wi)
                        word[j : j + 2] = replacement
                        last -= 1
                    j += 1
            except ValueError:
                pass
        del pair_counts[key]
        delta.pop(key, None)
        for k, d in delta.items():
            if d:
                c = pair_counts.get(k, 0) + d
                if c > 0:
                    pair_counts[k] = c
                else:
                    pair_counts.pop(k, None)
                    where.pop(k, None)
        for k, holders in created.items():
            c = pair_counts.get(k, 0)
            if c > 0:
                if k in where:
                    where[k].extend(holders)
                else:
                    where[k] = array("i", holders)
                if c >= min_count:
                    heappush(heap, (-c, k))

    encoder = {t: i for i, t in enumerate(id_to_token)}
    return ByteBPE(encoder, merges, {t: i for i, t in enumerate(specials)})


def _int_array() -> "array[int]":
    return array("i")
