"""The output transaction: names under --output_dir, the lock, the commit, the summary and its books.

May import: pipeline.runtime, transforms."""
