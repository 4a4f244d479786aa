"""The embedding model: loading it and taking turns at it (`embedder`), the models on disk and
installing them (`model_files`), and the int8 copy documents are embedded with (`int8_model`)."""

import os

# onnxruntime (under fastembed) sends usage telemetry by default and, on its first import, writes a
# device id into the user's cache (~/.cache/Microsoft/DeveloperTools/.onnxruntime). Nothing of a
# user's leaves the machine and pastchats leaves nothing of its own behind: every way pastchats loads
# onnxruntime passes through this package, which turns that off first (a user's own setting wins).
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
