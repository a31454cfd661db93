"""Token counts as three flat values (`TokenArrays`), what the compiled counter
(`token_count_kernel`) returns for a part of a vocabulary sample.

A part's {token: count} dictionary of 10^5 entries costs a pickle and an unpickle per entry
between stages; the tokens' text joined, where each ends and the counts pickle as one string
and two arrays. Kept apart from the kernel so that what only handles counts (the combines,
the driver building the pipeline) does not import numba.
"""

import itertools
from collections.abc import Iterable, Iterator
from typing import Any


class TokenArrays:
    """Token counts as flat values: `text`, every token joined; `ends`, where each token ends
    in it (int64); `counts` (int64). Tokens are distinct, in order of first occurrence. Has
    the read-only part of a mapping's interface the learners use (`len`, `items`, `keys`)."""

    __slots__ = ("text", "ends", "counts")

    def __init__(self, text: str, ends: Any, counts: Any) -> None:
        self.text, self.ends, self.counts = text, ends, counts

    def __getstate__(self) -> tuple[str, Any, Any]:
        return self.text, self.ends, self.counts

    def __setstate__(self, state: tuple[str, Any, Any]) -> None:
        self.text, self.ends, self.counts = state

    def __len__(self) -> int:
        return len(self.counts)

    def tokens(self) -> list[str]:
        text, ends = self.text, self.ends.tolist()
        return list(map(text.__getitem__, map(slice, itertools.chain([0], ends), ends)))

    def keys(self) -> list[str]:
        return self.tokens()

    def __iter__(self) -> Iterator[str]:
        return iter(self.tokens())

    def items(self) -> Iterable[tuple[str, int]]:
        return zip(self.tokens(), self.counts.tolist())

    def as_dict(self) -> dict[str, int]:
        return dict(self.items())
