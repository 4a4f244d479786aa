"""Importers turn chat histories, wherever they live, into `storage.models.Conversation` objects.

- One module per source format (`claude`, `chatgpt`, `claude_code`, `codex`, `gemini`, `cursor` with
  its databases in `cursor_store`, `cursor_agent`, `aider`, `copilot_chat`, `cline`, `roo_code`,
  `kilo_code`, `opencode`, `qwen_code`, `continue_dev`, `crush`, `goose`, `zed`, `plain`), each an
  `importers.base.Importer`: it tells its
  format from names and the first bytes of files (`detect`) and streams conversations (`read`). These
  modules read files and nothing else.
- `registry`: the one list of formats, detection, the choice `pastchats import` makes, and `read`.
- `base`: the importer protocols and the report of what was skipped. What the formats share is in
  `_common` (lenient values, times, assembling a conversation), `_files` (regular files, heads,
  bounded walks, JSON Lines, exports as a zip, a folder or a file), `_json` (streamed JSON),
  `_sqlite` (agents' databases, opened read-only), `_vscode` (the VS Code family's folders and URIs)
  and `_task_folders` (the task folders of Cline and its forks).
- `sources`: keeps the machine's agent logs in step with the store (discovery, sync, the archive,
  exclusions and deletion, reindex) through `storage.library.Library`.

Importers sit above storage and storage never imports them.
"""
