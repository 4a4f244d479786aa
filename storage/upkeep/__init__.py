"""Keeping a store whole: what `store.json` records (`store_meta`), its health as found on disk
(`health`), and memory handed back once searching pauses (`idle_release`)."""
