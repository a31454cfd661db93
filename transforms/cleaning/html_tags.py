"""HtmlTagFilter: a pair passes when neither side holds an HTML tag.

OpusFilter decides it with BeautifulSoup's `html.parser` tree builder: a side has a tag when
the parsed tree has any element, and a side the parser rejects (it raises while parsing)
counts as having none. BeautifulSoup adds nothing to that decision beyond what the standard
library's `html.parser.HTMLParser` reports (every start tag, `<br/>` included, becomes an
element; it feeds the parser with `convert_charrefs=False`), so this module asks the
standard-library parser directly, configured the same way, and the project does not depend on
bs4. The parser is Python's own: its handling of odd markup can change between Python
releases, for OpusFilter and this filter alike.
"""

from html.parser import HTMLParser
from typing import Any, Dict, List, Optional, Tuple

from transforms.cleaning.filters import PairFilter

# What OpusFilter treats as "the parser failed" (and then as "no tag").
PARSE_FAILURES = (TypeError, UnboundLocalError, NotImplementedError, AssertionError)


class _TagFinder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=False)
        self.found = False

    def handle_starttag(self, tag: str, attrs: List[Tuple[str, Optional[str]]]) -> None:
        self.found = True


def has_html_tag(text: str) -> bool:
    """Whether `text` parses into at least one element. Without a `<` there is no tag; the
    whole text is still parsed otherwise, because a parse failure after a tag means none."""
    if "<" not in text:
        return False
    finder = _TagFinder()
    try:
        finder.feed(text)
        finder.close()
    except PARSE_FAILURES:
        return False
    return finder.found


class HtmlTagFilter(PairFilter):
    """No side holds an HTML tag."""

    PARAMS: Dict[str, Any] = {}

    def configure(self) -> None:
        """No parameters."""

    def accept(self, source: str, target: str) -> bool:
        return not (has_html_tag(source) or has_html_tag(target))
