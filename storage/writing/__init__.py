"""Writing a store: one writer at a time and the journal a crash leaves (`locks`, `journal`), the
upsert of conversations and what is derived from them (`ingest`), and the chats set aside
(`quarantine`)."""
