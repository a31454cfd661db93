"""`tf.train.Example` messages without importing TensorFlow.

Importing TensorFlow takes ~3.5 s and ~400 MB per process, and the encode workers only need
it to serialize two int64 lists. This module declares the same message schema as TensorFlow's
`example.proto`/`feature.proto` (field numbers, types, packing: the wire format is the
contract) in a private protobuf descriptor pool, so serialization is done by the protobuf
runtime TensorFlow itself uses, and the bytes are the ones `tf.train.Example` produces
(`tests/transforms/formats/test_example_proto.py` checks that against TensorFlow).

The pool is private, under its own package name, so it never clashes with TensorFlow's
registration of `tensorflow.Example` when both are loaded in one process.
"""

from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from transforms.codecs.protobuf_wire import read_varint
from transforms.codecs.varints import encode_varints, varint

_PACKAGE = "t2t_beam_datagen.tf_example"
_FIELD = descriptor_pb2.FieldDescriptorProto


def _file_descriptor() -> Any:
    proto = descriptor_pb2.FileDescriptorProto(
        name="t2t_beam_datagen/tf_example.proto", package=_PACKAGE, syntax="proto3")

    def message(name: str, *fields: Any) -> Any:
        m = proto.message_type.add(name=name)
        for field_name, number, kind, label, type_name in fields:
            f = m.field.add(name=field_name, number=number, type=kind, label=label)
            if type_name:
                f.type_name = "." + _PACKAGE + "." + type_name
        return m

    repeated, optional = _FIELD.LABEL_REPEATED, _FIELD.LABEL_OPTIONAL
    message("BytesList", ("value", 1, _FIELD.TYPE_BYTES, repeated, None))
    message("FloatList", ("value", 1, _FIELD.TYPE_FLOAT, repeated, None))
    message("Int64List", ("value", 1, _FIELD.TYPE_INT64, repeated, None))
    feature = message("Feature",
                      ("bytes_list", 1, _FIELD.TYPE_MESSAGE, optional, "BytesList"),
                      ("float_list", 2, _FIELD.TYPE_MESSAGE, optional, "FloatList"),
                      ("int64_list", 3, _FIELD.TYPE_MESSAGE, optional, "Int64List"))
    feature.oneof_decl.add(name="kind")
    for f in feature.field:
        f.oneof_index = 0
    features = message("Features",
                       ("feature", 1, _FIELD.TYPE_MESSAGE, repeated, "Features.FeatureEntry"))
    entry = features.nested_type.add(name="FeatureEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, type=_FIELD.TYPE_STRING, label=optional)
    entry.field.add(name="value", number=2, type=_FIELD.TYPE_MESSAGE, label=optional,
                    type_name="." + _PACKAGE + ".Feature")
    message("Example", ("features", 1, _FIELD.TYPE_MESSAGE, optional, "Features"))
    return proto


def example_class() -> Any:
    """A new `Example` message class (same wire format as `tf.train.Example`)."""
    pool = descriptor_pool.DescriptorPool()
    pool.Add(_file_descriptor())
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(_PACKAGE + ".Example"))


class Int64FeaturesWriter:
    """Serializes Examples whose features are int64 lists, as TensorFlow would.

    `deterministic=True` writes the feature map sorted by key, as TensorFlow's writers in
    Tensor2Tensor's datagen do, so equal features always give equal bytes.
    """

    def __init__(self) -> None:
        self._cls = example_class()

    def serialize(self, features: Mapping[str, Any]) -> bytes:
        """features: {name: sequence of ints, or bytes (a one-value bytes_list)} -> bytes of
        the Example."""
        example = self._cls()
        feature_map = example.features.feature
        for name, values in features.items():
            if isinstance(values, bytes):
                feature_map[name].bytes_list.value.append(values)
            else:
                feature_map[name].int64_list.value.extend(values)
        return example.SerializeToString(deterministic=True)

    def parse(self, data: bytes) -> Dict[str, List[int]]:
        """bytes of an Example -> {name: [ints]} (int64 features only; others are skipped)."""
        example = self._cls.FromString(data)
        return {name: list(f.int64_list.value) for name, f in example.features.feature.items()
                if f.WhichOneof("kind") == "int64_list"}

    def parse_all(self, data: bytes) -> Dict[str, Any]:
        """bytes of an Example -> {name: [ints]} of its int64 features and {name: bytes} of
        its bytes features (the first value: a record's `lang_pair`)."""
        example = self._cls.FromString(data)
        out: Dict[str, Any] = {}
        for name, f in example.features.feature.items():
            kind = f.WhichOneof("kind")
            if kind == "int64_list":
                out[name] = list(f.int64_list.value)
            elif kind == "bytes_list" and f.bytes_list.value:
                out[name] = f.bytes_list.value[0]
        return out


_SMALL = tuple(varint(n) for n in range(1 << 14))  # the one- and two-byte varints
PAIR_FEATURE = "lang_pair"  # a bytes feature: the record's language pair, with several corpora


def _varint(n: int) -> bytes:
    """Protobuf's base-128 varint of a non-negative int (a length prefix)."""
    return _SMALL[n] if n < 0x4000 else varint(n)


class PairExampleWriter:
    """Examples of two int64 features (e.g. "inputs", "targets") built from cached parts.

    An Example is `features` (field 1) holding one map entry per feature, and a map entry's
    bytes depend only on its own name and values. So each side's entry is serialized once
    (`entry`), and can be kept with the line it came from; `join` then only concatenates two
    entries under the Example's length prefix. The entries go in the order the protobuf
    runtime writes them (checked on a sample at construction), so the bytes equal
    `Int64FeaturesWriter.serialize`, hence `tf.train.Example`'s.
    """

    def __init__(self, first_name: str, second_name: str) -> None:
        self._writer = Int64FeaturesWriter()
        self._names = (first_name, second_name)
        self._keys = tuple(_key_field(name) for name in self._names)
        a, b = self.entry(0, [1, 2]), self.entry(1, [3])
        expected = self._writer.serialize({first_name: [1, 2], second_name: [3]})
        self._swap = expected != self._joined(a, b)
        if self._swap and expected != self._joined(b, a):
            raise RuntimeError("unexpected Example layout from the protobuf runtime")
        for values in ([1], [300, 0, 1 << 40], list(range(200))):
            if self.entry_from_varints(0, encode_varints(values)) != self.entry(0, values):
                raise RuntimeError("unexpected map entry layout from the protobuf runtime")
        middle = self.bytes_entry(PAIR_FEATURE, b"en-de")  # with several language pairs
        if first_name < PAIR_FEATURE < second_name and self._writer.serialize(
                {first_name: [1, 2], PAIR_FEATURE: b"en-de", second_name: [3]}) != self.join(
                    a, b, middle):
            raise RuntimeError("unexpected Example layout from the protobuf runtime")

    def entry(self, side: int, values: Sequence[int]) -> bytes:
        """The serialized map entry of feature `side` (0 or 1) with int64 `values`."""
        return _strip_header(self._writer.serialize({self._names[side]: values}))

    def entry_from_varints(self, side: int, packed: bytes) -> bytes:
        """`entry(side, values)` from the values' concatenated varints
        (`transforms.codecs.varints`), built without a message object (`_entry`). Checked
        against `entry` at construction."""
        return _entry(self._keys[side], packed)

    def entry_frame(self, side: int) -> Tuple[Tuple[bytes, int], ...]:
        """The map entry of feature `side` as the nested length-delimited fields around its
        values' varints, innermost first: (bytes before the tag, tag), as `_entry` writes
        them; for an encoder that frames entries itself (`subword_kernel`)."""
        return _entry_frame(self._keys[side])

    def bytes_entry(self, name: str, value: bytes) -> bytes:
        """The serialized map entry of a bytes feature `name` holding `value` (a record's
        language pair)."""
        return _strip_header(self._writer.serialize({name: value}))

    @staticmethod
    def _joined(first: bytes, second: bytes, middle: bytes = b"") -> bytes:
        return b"\x0a" + _varint(len(first) + len(middle) + len(second)) + first + middle + second

    def join(self, first_entry: bytes, second_entry: bytes, middle: bytes = b"") -> bytes:
        """Example bytes with both features: `entry(0, ...)` and `entry(1, ...)`, and a
        `middle` entry whose name sorts between theirs (`bytes_entry` of `lang_pair`), as
        the protobuf runtime orders a map deterministically (checked at construction)."""
        if self._swap:
            return self._joined(second_entry, first_entry, middle)
        return self._joined(first_entry, second_entry, middle)


def _key_field(name: str) -> bytes:
    """A map entry's key field: tag 1 (length-delimited), the feature's name."""
    return b"\x0a" + _varint(len(name.encode())) + name.encode()


def _entry_frame(key_field: bytes) -> Tuple[Tuple[bytes, int], ...]:
    """`_entry`'s fields, innermost first: Int64List's packed `value` (field 1), Feature's
    `int64_list` (3), the map entry's `value` (2) after its key field, the entry itself."""
    return ((b"", 0x0A), (b"", 0x1A), (key_field, 0x12), (b"", 0x0A))


def _entry(key_field: bytes, packed: bytes) -> bytes:
    """A feature map entry {key, value: Feature {int64_list (field 3): Int64List {value
    (field 1, packed)}}} of the values' concatenated varints, each nested message behind its
    tag and length."""
    int64_list = b"\x0a" + _varint(len(packed)) + packed if packed else b""
    feature = b"\x1a" + _varint(len(int64_list)) + int64_list
    body = key_field + b"\x12" + _varint(len(feature)) + feature
    return b"\x0a" + _varint(len(body)) + body


class VarintExampleWriter:
    """Examples of the int64 features `names`, each given as its values' concatenated
    varints (`transforms.codecs.varints`), built without a message object: the bytes
    `Int64FeaturesWriter.serialize` writes, entries in the order its deterministic
    serialization sorts map keys (upb puts `inputs_position` before `inputs`), taken from
    the runtime and checked at construction. For packed records
    (`transforms.formats.packed_examples`), whose six features are joined from the pairs'
    varints; `text_names`: one-value bytes features a record may carry (`lang_pair`), in
    their place among the others."""

    def __init__(self, names: Sequence[str], text_names: Sequence[str] = ()) -> None:
        self._reference = reference = Int64FeaturesWriter()
        texts: Dict[str, bytes] = {}
        order = int64_varints(reference.serialize(
            dict({name: [1] for name in names}, **{name: b"x" for name in text_names})), texts)
        if order is None or sorted(order) != sorted(names) or sorted(texts) != sorted(
                text_names):
            raise RuntimeError("unexpected Example layout from the protobuf runtime")
        self.names = tuple(_entry_order(reference.serialize(
            dict({name: [1] for name in names}, **{name: b"x" for name in text_names}))))
        self._text_names = frozenset(text_names)
        self._keys = tuple(_key_field(name) for name in self.names)
        self._int_keys = tuple((key, name) for key, name in zip(self._keys, self.names)
                               if name not in self._text_names)
        self._text_entries: Dict[Tuple[str, bytes], bytes] = {}
        for values in ([1], [300, 0, 1 << 40], list(range(200)), []):
            sample = {name: values[i:] + values[:i] for i, name in enumerate(names)}
            with_texts: Dict[str, Any] = dict(sample, **{name: b"en-de" for name in text_names})
            if self.serialize({name: encode_varints(v) for name, v in sample.items()}) != \
                    reference.serialize(sample) or (text_names and self.serialize(
                        {name: encode_varints(v) for name, v in sample.items()},
                        {name: b"en-de" for name in text_names}) != reference.serialize(
                            with_texts)):
                raise RuntimeError("unexpected Example layout from the protobuf runtime")

    def _text_entry(self, name: str, value: bytes) -> bytes:
        known = self._text_entries.get((name, value))
        if known is None:
            known = self._text_entries[(name, value)] = _strip_header(
                self._reference.serialize({name: value}))
        return known

    def serialize(self, packed: Mapping[str, bytes],
                  texts: Optional[Mapping[str, bytes]] = None) -> bytes:
        """{name: concatenated varints} (and `texts` {text name: value}, those it has) ->
        bytes of the Example."""
        if not texts:
            inner = b"".join(_entry(key, packed[name]) for key, name in self._int_keys)
        else:
            inner = b"".join(
                (self._text_entry(name, texts[name]) if name in texts else b"")
                if name in self._text_names else _entry(key, packed[name])
                for key, name in zip(self._keys, self.names))
        return b"\x0a" + _varint(len(inner)) + inner


def _length_after(data: bytes, tag: int, pos: int) -> Tuple[int, int]:
    """(length, position after it) of the length-delimited field `tag` at `pos`; ValueError
    for another tag. Lengths under 128 (most here) are one byte."""
    if data[pos] != tag:
        raise ValueError("tag %d, not %d" % (data[pos], tag))
    size = data[pos + 1]
    if size < 0x80:
        return size, pos + 2
    return read_varint(data, pos + 1)


def _entry_order(data: bytes) -> List[str]:
    """The feature names of a serialized Example's map entries, in their order."""
    size, pos = _length_after(data, 0x0A, 0)
    names = []
    while pos < len(data):
        size, pos = _length_after(data, 0x0A, pos)
        entry_end = pos + size
        size, pos = _length_after(data, 0x0A, pos)
        names.append(data[pos:pos + size].decode())
        pos = entry_end
    return names


def int64_varints(data: bytes, texts: Optional[Dict[str, bytes]] = None
                  ) -> Optional[Dict[str, bytes]]:
    """{name: its values' concatenated varints} of a serialized Example whose features are
    packed int64 lists in the layout this module writes, read off the wire without a
    message object; None for any other layout (parse that one with `Int64FeaturesWriter`).
    With `texts`, a one-value bytes feature (a record's `lang_pair`) goes there instead."""
    try:
        size, pos = _length_after(data, 0x0A, 0)  # features
        end = pos + size
        features: Dict[str, bytes] = {}
        while pos < end:
            size, pos = _length_after(data, 0x0A, pos)  # a map entry
            entry_end = pos + size
            size, pos = _length_after(data, 0x0A, pos)  # its key
            name = data[pos:pos + size].decode()
            _, pos = _length_after(data, 0x12, pos + size)  # its value, a Feature
            if texts is not None and data[pos] == 0x0A:  # bytes_list: one value
                size, pos = _length_after(data, 0x0A, pos)
                size, pos = _length_after(data, 0x0A, pos)
                texts[name] = bytes(data[pos:pos + size])
                pos += size
                if pos != entry_end:
                    return None
                continue
            size, pos = _length_after(data, 0x1A, pos)  # int64_list
            packed = b""
            if size:
                size, pos = _length_after(data, 0x0A, pos)  # packed values
                packed = bytes(data[pos:pos + size])
                pos += size
            if pos != entry_end:
                return None
            features[name] = packed
        return features if pos == end == len(data) else None
    except (IndexError, ValueError):  # UnicodeDecodeError is a ValueError
        return None


def _strip_header(data: bytes) -> bytes:
    """The payload of a message that is a single length-delimited field 1 (`features`)."""
    assert data[0] == 0x0A
    i = 1
    while data[i] & 0x80:
        i += 1
    return data[i + 1:]
