"""Importers turn chat histories, wherever they live, into `storage.models.Conversation` objects.

- One module per source format, each an `importers.base.Importer`: it tells its format from names and
  the first bytes of files (`detect`) and streams conversations (`read`); an agent's module also
  declares where the agent keeps its logs on each system and the environment variables that move them
  (`importers.base.AgentLogImporter`). These modules read files and nothing else; `registry` lists them.
- `registry`: the one list of formats, the agents' variables, detection, the choice `pastchats import`
  makes, and `read`.
- `base`: the importer protocols and the report of what was skipped. What the formats share is in
  `_common` (lenient values, times, assembling a conversation), `_files` (regular files, heads,
  bounded walks, JSON Lines, exports as a zip, a folder or a file), `_json` (streamed JSON),
  `_sqlite` (agents' databases, opened read-only, and `DatabaseImporter`), `_vscode` (the VS Code
  family's folders and URIs) and `_task_folders` (the task folders of Cline and its forks).
- `sources`: keeps the machine's agent logs in step with the store (discovery, sync, the archive,
  exclusions and deletion, reindex) through `storage.library.Library`.

Importers sit above storage and storage never imports them.
"""
