"""Vocabulary files on any file system: a `Vocabulary`'s contents read and written through
`transforms.storage.file_io` (Beam's FileSystems, or the job's object store clients).

The codecs' `Vocabulary` classes know their files' names and contents but never open a
file (`transforms.codecs.vocabulary`); this module is where a path becomes contents and back,
for the driver (given, reused and learnt vocabularies) and the encode pass's workers alike.
`stores`, everywhere here: the job's or worker's `ObjectStores`, or None.
"""

from typing import Optional, Type

from apache_beam.io.filesystems import FileSystems

from transforms.codecs.vocabulary import VocabFiles, Vocabulary, is_single_file
from transforms.storage import file_io
from transforms.storage.object_stores import ObjectStores


def _path_of(path: str, name: str) -> str:
    return FileSystems.join(path, name) if name else path


def read_files(vocabulary: Type[Vocabulary], path: str,
               stores: Optional[ObjectStores] = None) -> VocabFiles:
    """The files of the vocabulary at `path`: the first of `vocabulary.file_sets` whose first
    file is there (else the last set, whose read then fails naming the file)."""
    sets = vocabulary.file_sets
    names = next((names for names in sets[:-1]
                  if file_io.exists(_path_of(path, names[0]), stores)), sets[-1])
    files = {}
    for name in names:
        data = file_io.read_bytes(_path_of(path, name), stores)
        files[name] = data if name in vocabulary.binary_files else data.decode("utf-8")
    return files


def load(vocabulary: Type[Vocabulary], path: str, stores: Optional[ObjectStores] = None,
         for_encoding: bool = False) -> Vocabulary:
    """The `vocabulary` (a Vocabulary class) of the file or directory at `path`; with
    `for_encoding`, the one the encode pass uses (`Vocabulary.for_encoding`)."""
    files = read_files(vocabulary, path, stores)
    return vocabulary.for_encoding(files) if for_encoding else vocabulary.from_files(files)


def exists(vocabulary: Type[Vocabulary], path: str,
           stores: Optional[ObjectStores] = None) -> bool:
    """Whether a complete vocabulary is at `path` (to be reused): a directory's file written
    last is there."""
    return file_io.exists(_path_of(path, vocabulary.file_sets[0][-1]), stores)


def missing(vocabulary: Type[Vocabulary], path: str,
            stores: Optional[ObjectStores] = None) -> Optional[str]:
    """Why a given vocabulary at `path` cannot be there (a message), or None."""
    if any(all(file_io.exists(_path_of(path, name), stores) for name in names)
           for names in vocabulary.file_sets):
        return None
    return vocabulary.missing_reason


def write(vocabulary: Type[Vocabulary], path: str, files: VocabFiles,
          stores: Optional[ObjectStores] = None) -> None:
    """Writes `files` (`Vocabulary.to_files`, or a learner's) to `path`. A directory is
    emptied first (never a new vocab.json beside an old merges.txt) and its files written in
    `file_sets[0]` order, the last one last, so `exists` never sees half a vocabulary."""
    names = vocabulary.file_sets[0]
    if not is_single_file(vocabulary):
        file_io.delete_tree(path, stores)
        FileSystems.mkdirs(path)
    for name in names:
        data = files[name]
        file_io.write_bytes_atomically(
            _path_of(path, name), data if isinstance(data, bytes) else data.encode("utf-8"),
            stores)
