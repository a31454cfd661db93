"""Datagen jobs: options, entry points, the multi-pass driver and the output layout."""
