"""The dropped-lines bitmap: which line numbers of a dataset the cleaning stage dropped.

One bit per pair (bit n-1 of the file for line n, least significant bit first): 95 KB for the
760k-pair bench corpus, read whole by every reader of the dataset (the vocab sample, each
encode chunk) and asked per line in constant time. `transforms.clean.clean_pairs` writes it.
"""

from typing import Iterable, Iterator, Union


def new_bitmap(lines: int) -> bytearray:
    return bytearray((lines + 7) // 8)


def mark(bitmap: bytearray, number: int) -> None:
    """Sets 1-based line `number`."""
    bitmap[(number - 1) >> 3] |= 1 << ((number - 1) & 7)


def is_dropped(bitmap: Union[bytes, bytearray], number: int) -> bool:
    """Whether 1-based line `number` is set."""
    index = number - 1
    return index >> 3 < len(bitmap) and bool(bitmap[index >> 3] & (1 << (index & 7)))


def kept_lines(raw_lines: Iterable[bytes], bitmap: bytes,
               first_number: int = 1) -> Iterator[bytes]:
    """The lines of `raw_lines` (numbered from `first_number`) whose numbers are not set."""
    for number, line in enumerate(raw_lines, first_number):
        if not is_dropped(bitmap, number):
            yield line
