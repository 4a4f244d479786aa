"""Importers turn chat histories, wherever they live, into `storage.models.Conversation` objects.

One module per source format; those modules read files and nothing else. `importers.sources` keeps
the machine's agent logs in step with the store (discovery, sync, the archive, exclusions) through
`storage.library.Library`: importers sit above storage and storage never imports them.
"""
