"""Files on any file system: helpers over Beam's FileSystems, and direct object-store clients for what FileSystems cannot say.

Also `vocab_files`: a vocabulary's files read and written on any file system, and `heap`: memory
a process freed handed back to the system (glibc's malloc_trim). Never a Beam stage.

May import: transforms.codecs, transforms.formats, transforms.errors."""
