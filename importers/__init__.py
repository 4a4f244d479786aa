"""Importers turn chat histories, wherever they live, into `storage.models.Conversation` objects.

One module per source format. Importers read files and nothing else: no storage code here.
"""
