"""Sources: where chats come from on this machine, and what pastchats remembers about them.

Discovery of agent logs, incremental sync (per-file high-water marks), the private archive copy of
every indexed log, and the user's exclusions and deletions. These sit above `storage` (they feed
`storage.library.Library`) and beside the format parsers in `importers`.
"""
