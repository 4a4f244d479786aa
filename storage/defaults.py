"""Defaults that the server needs before anything heavy is imported.

`server.settings` is on the path to answering `initialize`; importing `storage.embedding.embedder` there would
pull in NumPy (~0.1-0.4 s here) before the first reply.
"""

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"


def install_hint(name: str | None = None) -> str:
    """The commands that install the model, online and offline (every message that says how)."""
    target = f" {name}" if name else ""
    return (
        f"pastchats model install{target}  (offline: on a machine that has the model, copy the folder "
        f"`pastchats model status` shows as Models folder, then pastchats model install{target} --from DIR)"
    )
