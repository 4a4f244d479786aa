"""Retrieval units, what both legs of a search rank: a message's passages (`passages`) and the
exchange windows of a few consecutive messages (`windows`)."""
