"""Sources: where chats come from on this machine, and what pastchats remembers about them.

- `discovery`: where agent logs live (`discover`), as each agent-log importer knows it;
- `sync`: `Syncer`, which imports what changed since the last run (per-file high-water marks);
- `archive`: `Archive`, the private copy of every log sync indexed;
- `sync_state`: `SyncState`, what sync remembers between runs (`home/sync-state.json`);
- `reindex`: `Reindexer`, which rebuilds the store from the archive;
- `privacy`: the user's `Exclusions`, and `delete` / `forget` / `unforget`;
- `report`: what an import or a sync did (`SourceSummary`, `SyncReport`).

Each module's `__all__` is its public face. Nothing is re-exported here: sync, reindex and privacy
load the store (`storage.library`), and naming `report` or `discovery` should not. These modules sit
above `storage` (they feed `storage.library.Library`) and beside the format parsers in `importers`.
"""
