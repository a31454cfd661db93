"""The compiled merge loop of the byte-level BPE learner (`byte_bpe_learner.learn_byte_bpe`).

`learn_merges` takes the distinct pre-tokens as one flat array of symbol ids (a start, a length
and a count per word) and returns the merges in order. Its state is numpy arrays only:

- words are merged in place (a read and a write pointer over each word's slice);
- pair counts live in an open-addressing hash table keyed by the packed pair
  (left id << shift | right id); each key also heads a linked list of the words that held the
  pair when it was counted (a superset: a word that lost the pair is scanned and skipped). A merge
  visits only the words on its pair's list, and updates the counts of the pairs next to each
  merged occurrence; entries of a merged (or vanished) pair go back to a free list;
- a binary max-heap of (count, pair) with lazy invalidation gives the next merge: highest count,
  then the smallest (left id, right id), the rule of `byte_bpe_learner`;
- a second hash table finds whether a merged token's bytes are already a token (a special token
  or an earlier merge), in which case the merge adds no id, as in `tokenizers`.

The loops over words (`_count_pairs`, `_merge_words`) take every array as an argument and stop
before a word that might not fit; only the caller replaces (grows) arrays. An array variable
replaced inside a hot loop costs numba's reference counting on every iteration: with it the
same merges took 5x the time.

Needs numpy and numba (as `subword_index`), neither Beam nor TensorFlow.
"""

import numba
import numpy as np

_NJIT = dict(cache=True, nogil=True)
_EMPTY = -1
_MUL = -7046029254386353131  # 0x9E3779B97F4A7C15 as int64: Fibonacci hashing
_FNV_OFFSET = -3750763034362895579  # 0xcbf29ce484222325 as int64
_FNV_PRIME = 1099511628211

# the scalars the word loops share with `learn_merges`, in one int64 array
_USED, _FREE, _N_FREE, _N_ENTRIES, _N_CREATED = range(5)


@numba.njit(**_NJIT)
def _slot(keys, key):
    """The slot holding `key` in the table `keys` (power-of-two size), or the empty slot where
    it goes."""
    mask = keys.shape[0] - 1
    i = ((key * _MUL) >> 32) & mask
    while True:
        k = keys[i]
        if k == key or k == _EMPTY:
            return i
        i = (i + 1) & mask


@numba.njit(**_NJIT)
def _grown(keys, counts, heads, stamps, needed):
    """The pair table with room for `needed` keys at half load (at least twice as large);
    pairs with count 0 and no words are left out. Returns the arrays and the keys kept."""
    size = keys.shape[0] * 2
    while size < 2 * needed:
        size *= 2
    new_keys = np.full(size, _EMPTY, np.int64)
    new_counts = np.zeros(size, np.int64)
    new_heads = np.full(size, -1, np.int32)
    new_stamps = np.zeros(size, np.int32)
    used = 0
    for i in range(keys.shape[0]):
        if keys[i] != _EMPTY and (counts[i] != 0 or heads[i] != -1):
            j = _slot(new_keys, keys[i])
            new_keys[j] = keys[i]
            new_counts[j] = counts[i]
            new_heads[j] = heads[i]
            new_stamps[j] = stamps[i]
            used += 1
    return new_keys, new_counts, new_heads, new_stamps, used


@numba.njit(**_NJIT)
def _grow_int32(values, size):
    out = np.empty(size, np.int32)
    out[: values.shape[0]] = values
    return out


@numba.njit(**_NJIT)
def _grow_int64(values, size):
    out = np.empty(size, np.int64)
    out[: values.shape[0]] = values
    return out


@numba.njit(**_NJIT)
def _above(count_x, key_x, count_y, key_y):
    """Heap order: the higher count first, then the smaller pair."""
    return count_x > count_y or (count_x == count_y and key_x < key_y)


@numba.njit(**_NJIT)
def _sift_down(heap_counts, heap_keys, n, i):
    count, key = heap_counts[i], heap_keys[i]
    while True:
        child = 2 * i + 1
        if child >= n:
            break
        if child + 1 < n and _above(heap_counts[child + 1], heap_keys[child + 1],
                                    heap_counts[child], heap_keys[child]):
            child += 1
        if not _above(heap_counts[child], heap_keys[child], count, key):
            break
        heap_counts[i], heap_keys[i] = heap_counts[child], heap_keys[child]
        i = child
    heap_counts[i], heap_keys[i] = count, key


@numba.njit(**_NJIT)
def _heap_push(heap_counts, heap_keys, n, count, key):
    """Adds (count, key) at index n (the caller made room); returns the new size."""
    i = n
    while i > 0:
        parent = (i - 1) // 2
        if not _above(count, key, heap_counts[parent], heap_keys[parent]):
            break
        heap_counts[i], heap_keys[i] = heap_counts[parent], heap_keys[parent]
        i = parent
    heap_counts[i], heap_keys[i] = count, key
    return n + 1


@numba.njit(**_NJIT)
def _token_hash(pool, start, length):
    h = _FNV_OFFSET
    for i in range(start, start + length):
        h = (h ^ pool[i]) * _FNV_PRIME
    return h ^ (h >> 29)


@numba.njit(**_NJIT)
def _token_slot(table, pool, tok_start, tok_len, start, length):
    """The slot of the token whose bytes are pool[start:start+length], or the empty slot where
    it goes."""
    mask = table.shape[0] - 1
    i = _token_hash(pool, start, length) & mask
    while True:
        t = table[i]
        if t == _EMPTY:
            return i
        if tok_len[t] == length:
            s = tok_start[t]
            same = True
            for k in range(length):
                if pool[s + k] != pool[start + k]:
                    same = False
                    break
            if same:
                return i
        i = (i + 1) & mask


@numba.njit(**_NJIT)
def _count_pairs(codes, starts, lengths, word_counts, keys, counts, heads, entry_word,
                 entry_next, shift, w, st):
    """Counts the pairs of words w, w+1, ... and lists the words under their pairs; stops
    before a word whose pairs might not fit (the table at half load, the entries). Returns that
    word (or the number of words)."""
    used = st[_USED]
    n_entries = st[_N_ENTRIES]
    while w < starts.shape[0]:
        if (2 * (used + lengths[w]) > keys.shape[0]
                or n_entries + lengths[w] - 1 > entry_word.shape[0]):
            break
        c = word_counts[w]
        s = starts[w]
        for i in range(s, s + lengths[w] - 1):
            key = (np.int64(codes[i]) << shift) | codes[i + 1]
            j = _slot(keys, key)
            if keys[j] == _EMPTY:
                keys[j] = key
                used += 1
            counts[j] += c
            if heads[j] == -1 or entry_word[heads[j]] != w:
                entry_word[n_entries] = w
                entry_next[n_entries] = heads[j]
                heads[j] = n_entries
                n_entries += 1
        w += 1
    st[_USED] = used
    st[_N_ENTRIES] = n_entries
    return w


@numba.njit(**_NJIT)
def _merge_words(codes, starts, lengths, word_counts, visited, keys, counts, heads, stamps,
                 entry_word, entry_next, created, key, a, b, new, shift, stamp, e, st):
    """Merges (a, b) -> new in the words of the list from entry `e` on, updating the counts
    and lists of the pairs around each merged occurrence; pairs whose count grew go to
    `created` once. Stops before a word that might not fit (a merge adds at most 2 pairs, 2
    entries and 2 created per 2 symbols); returns that entry, or -1 at the end of the list.
    (No call in here takes an array: numba would count references on every call.)"""
    while e != -1:
        w = entry_word[e]
        if visited[w] != stamp:
            room = lengths[w]
            if (2 * (st[_USED] + room) > keys.shape[0]
                    or (st[_N_FREE] < room and st[_N_ENTRIES] + room > entry_word.shape[0])
                    or st[_N_CREATED] + room > created.shape[0]):
                break
        following = entry_next[e]
        entry_next[e] = st[_FREE]
        st[_FREE] = e
        st[_N_FREE] += 1
        e = following
        if visited[w] == stamp:
            continue
        visited[w] = stamp
        c = word_counts[w]
        s = starts[w]
        end = s + lengths[w]
        i = s
        o = s
        while i < end:
            x = codes[i]
            if x == a and i + 1 < end and codes[i + 1] == b:
                # left neighbour l loses (l, a), gains (l, new); right neighbour r loses (b, r),
                # gains (new, r): both as the word is now (left of o merged, right of i not yet)
                for side in range(2):
                    if side == 0:
                        if o == s:
                            continue
                        lost = (np.int64(codes[o - 1]) << shift) | a
                        gained = (np.int64(codes[o - 1]) << shift) | new
                    else:
                        if i + 2 >= end:
                            continue
                        lost = (np.int64(b) << shift) | codes[i + 2]
                        gained = (np.int64(new) << shift) | codes[i + 2]
                    if lost != key:  # the merged pair's count is dropped at the end
                        k = _slot(keys, lost)
                        counts[k] -= c
                        if counts[k] == 0:  # no word holds it: its list goes
                            f = heads[k]
                            heads[k] = -1
                            while f != -1:
                                g = entry_next[f]
                                entry_next[f] = st[_FREE]
                                st[_FREE] = f
                                st[_N_FREE] += 1
                                f = g
                    k = _slot(keys, gained)
                    if keys[k] == _EMPTY:
                        keys[k] = gained
                        st[_USED] += 1
                    counts[k] += c
                    if heads[k] == -1 or entry_word[heads[k]] != w:
                        if st[_FREE] != -1:
                            f = st[_FREE]
                            st[_FREE] = entry_next[f]
                            st[_N_FREE] -= 1
                        else:
                            f = st[_N_ENTRIES]
                            st[_N_ENTRIES] += 1
                        entry_word[f] = w
                        entry_next[f] = heads[k]
                        heads[k] = f
                    if stamps[k] != stamp:
                        stamps[k] = stamp
                        created[st[_N_CREATED]] = gained
                        st[_N_CREATED] += 1
                codes[o] = new
                o += 1
                i += 2
            else:
                codes[o] = x
                o += 1
                i += 1
        lengths[w] = o - s
    return e


@numba.njit(**_NJIT)
def learn_merges(codes, starts, lengths, word_counts, tok_pool, tok_start, tok_len,
                 vocab_size, min_count, shift, start_size):
    """Merges (left ids, right ids, new ids), in order, until `vocab_size` ids or no pair is
    counted `min_count` times.

    codes: the words' symbol ids, concatenated (int32; changed in place); starts, lengths
    (int64, int32; lengths changed), word_counts (int64): one per word of 2 symbols or more.
    tok_pool (int32 bytes), tok_start, tok_len (int64): the bytes of the first len(tok_start)
    ids (specials, then the byte symbols); length -1 for a special no merge can spell. Pairs are
    keyed (left << shift | right), so ids must be below 2**shift. start_size (a power of two)
    caps the first size of the growing arrays (the pair table starts at 2**16 slots, the entries
    at one per pair of symbols); tests make it small to exercise their growth.
    """
    n_ids = tok_start.shape[0]
    right_mask = (1 << shift) - 1
    n_words = starts.shape[0]
    st = np.zeros(5, np.int64)
    st[_FREE] = -1

    # token bytes: pool grows as merges add tokens; table size fixed (>= 2 * vocab_size)
    pool = _grow_int32(tok_pool, max(tok_pool.shape[0] * 2, 1024))
    pool_used = tok_pool.shape[0]
    t_start = _grow_int64(tok_start, vocab_size)
    t_len = _grow_int64(tok_len, vocab_size)
    t_size = 1024
    while t_size < 2 * vocab_size:
        t_size *= 2
    token_table = np.full(t_size, _EMPTY, np.int64)
    for t in range(n_ids):
        if t_len[t] >= 0:
            token_table[_token_slot(token_table, pool, t_start, t_len, t_start[t], t_len[t])] = t

    # pair table; word lists (entry -> word, next entry; a free list through next)
    size = min(1 << 16, start_size)
    keys = np.full(size, _EMPTY, np.int64)
    counts = np.zeros(size, np.int64)
    heads = np.full(size, -1, np.int32)
    stamps = np.zeros(size, np.int32)
    capacity = 0  # entries the counting needs at most: one per pair of symbols
    for w in range(n_words):
        capacity += lengths[w] - 1
    capacity = min(capacity, 2 ** 31 - 1)
    entry_word = np.empty(min(capacity, start_size), np.int32)
    entry_next = np.empty(min(capacity, start_size), np.int32)
    w = 0
    while True:
        w = _count_pairs(codes, starts, lengths, word_counts, keys, counts, heads, entry_word,
                         entry_next, shift, w, st)
        if w == n_words:
            break
        if 2 * (st[_USED] + lengths[w]) > keys.shape[0]:
            keys, counts, heads, stamps, used = _grown(keys, counts, heads, stamps,
                                                       st[_USED] + lengths[w])
            st[_USED] = used
        if st[_N_ENTRIES] + lengths[w] - 1 > entry_word.shape[0]:
            size = min(max(2 * entry_word.shape[0], st[_N_ENTRIES] + lengths[w] - 1), capacity)
            entry_word = _grow_int32(entry_word, size)
            entry_next = _grow_int32(entry_next, size)

    n_heap = 0
    for j in range(keys.shape[0]):
        if keys[j] != _EMPTY and counts[j] >= min_count:
            n_heap += 1
    heap_counts = np.empty(max(n_heap, min(1024, start_size)), np.int64)
    heap_keys = np.empty(max(n_heap, min(1024, start_size)), np.int64)
    n_heap = 0
    for j in range(keys.shape[0]):
        if keys[j] != _EMPTY and counts[j] >= min_count:
            heap_counts[n_heap] = counts[j]
            heap_keys[n_heap] = keys[j]
            n_heap += 1
    for i in range(n_heap // 2 - 1, -1, -1):
        _sift_down(heap_counts, heap_keys, n_heap, i)

    visited = np.zeros(n_words, np.int32)
    created = np.empty(min(1024, start_size), np.int64)
    out_left = np.empty(vocab_size, np.int32)
    out_right = np.empty(vocab_size, np.int32)
    out_new = np.empty(vocab_size, np.int32)
    n_merges = 0
    while n_heap > 0 and n_ids < vocab_size:
        count, key = heap_counts[0], heap_keys[0]
        n_heap -= 1
        if n_heap > 0:
            heap_counts[0], heap_keys[0] = heap_counts[n_heap], heap_keys[n_heap]
            _sift_down(heap_counts, heap_keys, n_heap, 0)
        j = _slot(keys, key)
        current = counts[j] if keys[j] == key else 0
        if current != count:
            if current >= min_count:  # stale: back in with its count now (room: it was popped)
                n_heap = _heap_push(heap_counts, heap_keys, n_heap, current, key)
            continue
        a = np.int32(key >> shift)
        b = np.int32(key & right_mask)

        # the merged token: an earlier one with the same bytes, or a new id
        length = t_len[a] + t_len[b]
        if pool_used + length > pool.shape[0]:
            pool = _grow_int32(pool, 2 * (pool_used + length))
        pool[pool_used: pool_used + t_len[a]] = pool[t_start[a]: t_start[a] + t_len[a]]
        pool[pool_used + t_len[a]: pool_used + length] = pool[t_start[b]: t_start[b] + t_len[b]]
        ts = _token_slot(token_table, pool, t_start, t_len, pool_used, length)
        if token_table[ts] == _EMPTY:
            new = n_ids
            n_ids += 1
            t_start[new] = pool_used
            t_len[new] = length
            pool_used += length
            token_table[ts] = new
        else:
            new = token_table[ts]
        out_left[n_merges], out_right[n_merges], out_new[n_merges] = a, b, new
        n_merges += 1

        st[_N_CREATED] = 0
        e = heads[j]
        heads[j] = -1
        while True:
            e = _merge_words(codes, starts, lengths, word_counts, visited, keys, counts, heads,
                             stamps, entry_word, entry_next, created, key, a, b, new, shift,
                             n_merges, e, st)
            if e == -1:
                break
            room = lengths[entry_word[e]]
            if 2 * (st[_USED] + room) > keys.shape[0]:
                keys, counts, heads, stamps, used = _grown(keys, counts, heads, stamps,
                                                           st[_USED] + room)
                st[_USED] = used
            if st[_N_FREE] < room and st[_N_ENTRIES] + room > entry_word.shape[0]:
                if st[_N_ENTRIES] + room >= 2 ** 31:
                    raise ValueError("byte-level BPE: over 2**31 pair entries")
                # by half (not double): this pool is the largest array, grown late if at all
                size = min(max(entry_word.shape[0] * 3 // 2, st[_N_ENTRIES] + room), 2 ** 31 - 1)
                entry_word = _grow_int32(entry_word, size)
                entry_next = _grow_int32(entry_next, size)
            if st[_N_CREATED] + room > created.shape[0]:
                created = _grow_int64(created, 2 * (st[_N_CREATED] + room))
        counts[_slot(keys, key)] = 0

        n_created = st[_N_CREATED]
        if n_heap + n_created > heap_counts.shape[0]:
            heap_counts = _grow_int64(heap_counts, 2 * (n_heap + n_created))
            heap_keys = _grow_int64(heap_keys, 2 * (n_heap + n_created))
        for n in range(n_created):
            c = counts[_slot(keys, created[n])]
            if c >= min_count:
                n_heap = _heap_push(heap_counts, heap_keys, n_heap, c, created[n])
    return out_left[:n_merges], out_right[:n_merges], out_new[:n_merges]
