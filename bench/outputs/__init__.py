"""What the model reads: how much of its context the tools take (`output_size`), and every tool's output
for a few hundred calls, to compare two versions byte for byte (`tool_outputs`)."""
