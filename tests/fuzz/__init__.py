"""Property-based fuzzing of the importers and the tool arguments (hypothesis)."""
