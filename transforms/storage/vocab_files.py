"""Vocabulary files on any file system: a `Vocabulary`'s contents read and written through
`transforms.storage.file_io` (Beam's FileSystems, or the job's object store clients).

The codecs' `Vocabulary` classes know their files' names and contents but never open a
file (`transforms.codecs.vocabulary`); this module is where a path becomes contents and back,
for the driver (given, reused and learnt vocabularies) and the encode pass's workers alike.
One `VocabularyFiles` object per kind and file system does all of it: read, load, check and
write (the fingerprint sidecar beside a vocabulary is the driver's: `pipeline.driver.
vocabularies`).
"""

from typing import Optional

from apache_beam.io.filesystems import FileSystems

from transforms.codecs.vocabulary import (VocabFiles, Vocabulary, VocabularyLoader,
                                          is_single_file)
from transforms.storage import file_io
from transforms.storage.object_stores import ObjectStores


def _path_of(path: str, name: str) -> str:
    return FileSystems.join(path, name) if name else path


class VocabularyFiles:
    """The vocabularies of one kind (`loader`: its class and the options they are built
    with) as files and directories, through `stores` (the job's or worker's
    `ObjectStores`, or None: Beam's FileSystems only)."""

    def __init__(self, loader: VocabularyLoader, stores: Optional[ObjectStores] = None
                 ) -> None:
        self.loader = loader
        self.vocabulary = loader.vocabulary
        self.stores = stores

    def read(self, path: str) -> VocabFiles:
        """The files of the vocabulary at `path`: the first of the class's `file_sets` whose
        first file is there (else the last set, whose read then fails naming the file)."""
        sets = self.vocabulary.file_sets
        names = next((names for names in sets[:-1]
                      if file_io.exists(_path_of(path, names[0]), self.stores)), sets[-1])
        files = {}
        for name in names:
            data = file_io.read_bytes(_path_of(path, name), self.stores)
            files[name] = (data if name in self.vocabulary.binary_files
                           else data.decode("utf-8"))
        return files

    def load(self, path: str, for_encoding: bool = False) -> Vocabulary:
        """The vocabulary of the file or directory at `path`; with `for_encoding`, the one
        the encode pass uses (`Vocabulary.for_encoding`). ValueError: not one of this kind
        (or one lacking what the run needs, e.g. its EOS token)."""
        files = self.read(path)
        return (self.loader.for_encoding(files) if for_encoding
                else self.loader.from_files(files))

    def exists(self, path: str) -> bool:
        """Whether a complete vocabulary is at `path` (to be reused): a directory's file
        written last is there."""
        return file_io.exists(_path_of(path, self.vocabulary.file_sets[0][-1]), self.stores)

    def missing(self, path: str) -> Optional[str]:
        """Why a given vocabulary at `path` cannot be there (a message), or None."""
        if any(all(file_io.exists(_path_of(path, name), self.stores) for name in names)
               for names in self.vocabulary.file_sets):
            return None
        return self.vocabulary.missing_reason

    def write(self, path: str, files: VocabFiles) -> None:
        """Writes `files` (`Vocabulary.to_files`, or a learner's) to `path`. A directory is
        emptied first (never a new vocab.json beside an old merges.txt) and its files
        written in `file_sets[0]` order, the last one last, so `exists` never sees half a
        vocabulary; files derived from those (byte_bpe's `tokenizer.json`) go first."""
        names = self.vocabulary.file_sets[0]
        if not is_single_file(self.vocabulary):
            file_io.delete_tree(path, self.stores)
            FileSystems.mkdirs(path)
            names = tuple(name for name in files if name not in names) + names
        for name in names:
            data = files[name]
            file_io.write_bytes_atomically(
                _path_of(path, name),
                data if isinstance(data, bytes) else data.encode("utf-8"), self.stores)
