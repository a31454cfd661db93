"""How a corpora file's YAML is read: PyYAML's safe loader with three of YAML 1.1's readings
taken out, because each loses or changes what the user wrote without a word.

- A repeated key (`corpora:` twice, as `cat a.yaml b.yaml` makes; `train:` twice in an
  entry) keeps only the last in every YAML loader: here it is a problem naming where it is
  (`RepeatedKey`), found on the composed nodes before anything is constructed.
- `yes`, `no`, `on`, `off` are booleans in YAML 1.1: `target_lang: no` (Norwegian) would be
  False. A corpora file has no boolean key, so only `true`/`false` are booleans (YAML 1.2's
  core schema) and the rest are the strings written.
- `1e-3` is a string in YAML 1.1 (its floats need a dot): numbers are read as YAML 1.2's
  core schema reads them (`weight: 1e-3` is 0.001).
"""

import re
from typing import Any, List, Optional

import yaml

from transforms.errors import JobError

# YAML 1.2 core schema: booleans and floats (ints are read as YAML 1.1 reads them)
_BOOL = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
_FLOAT = re.compile(r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
                    r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$")
_TAG_BOOL = "tag:yaml.org,2002:bool"
_TAG_FLOAT = "tag:yaml.org,2002:float"
_TAG_INT = "tag:yaml.org,2002:int"


class CorporaLoader(yaml.SafeLoader):
    """The safe loader with YAML 1.2's booleans and floats (module docstring)."""


CorporaLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag not in (_TAG_BOOL, _TAG_FLOAT)]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.copy().items()}
CorporaLoader.add_implicit_resolver(_TAG_BOOL, _BOOL, list("tTfF"))
CorporaLoader.add_implicit_resolver(_TAG_FLOAT, _FLOAT, list("-+0123456789."))
# an int matches the float pattern too: it stays an int when the int resolver comes first
for _first, _resolvers in CorporaLoader.yaml_implicit_resolvers.items():
    _resolvers.sort(key=lambda resolver: resolver[0] != _TAG_INT)


class RepeatedKey(JobError, ValueError):
    """A mapping names a key twice: `where` is its path (`corpora[1] (en-de): train`, or ""
    at the top), `key` the key and `line` its second occurrence's line (1-based)."""

    def __init__(self, where: str, key: str, line: int) -> None:
        super().__init__("%s: %r" % (where, key))
        self.where, self.key, self.line = where, key, line


def _entry_name(node: yaml.Node) -> Optional[str]:
    """The `name:` of an entry's mapping node, if it is a plain string."""
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode) and key.value == "name" and isinstance(
                    value, yaml.ScalarNode):
                return value.value
    return None


def _check_repeats(node: yaml.Node, where: str, seen: List[int]) -> None:
    """Raises RepeatedKey at the first mapping under `node` that repeats a key."""
    if id(node) in seen:  # an alias met again
        return
    seen.append(id(node))
    if isinstance(node, yaml.MappingNode):
        keys: List[str] = []
        for key, value in node.value:
            name = key.value if isinstance(key, yaml.ScalarNode) else repr(key)
            if name in keys:
                raise RepeatedKey(where, name, key.start_mark.line + 1)
            keys.append(name)
            _check_repeats(value, "%s: %s" % (where, name) if where else name, seen)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            name = _entry_name(item)
            _check_repeats(item, "%s[%d]%s" % (where, i, " (%s)" % name if name else ""),
                           seen)


def load(text: str) -> Any:
    """The data of a corpora file's `text` (yaml.YAMLError when it is not YAML, RepeatedKey
    when a mapping repeats a key)."""
    loader = CorporaLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_repeats(node, "", [])
        return loader.construct_document(node)
    finally:
        loader.dispose()
