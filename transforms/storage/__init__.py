"""Files on any file system: helpers over Beam's FileSystems, and direct object-store clients for what FileSystems cannot say.

May import transforms.formats and transforms.codecs; never a Beam stage or pipeline."""
