"""Exports that arrive as a zip, an unzipped directory or a single JSON file, read the same way
(`Bundle`, in `importers.sniff_files`, where detection reads it without pydantic), and the JSON
readers their importers stream members with.
"""

from __future__ import annotations

from importers._json import BrokenJson, Malformed, iter_json_array
from importers.sniff_files import MAX_WHOLE_BYTES, Bundle, open_bundle

__all__ = ["MAX_WHOLE_BYTES", "BrokenJson", "Bundle", "Malformed", "iter_json_array", "open_bundle"]
