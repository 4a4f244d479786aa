"""What the benchmarks and tests feed the product: a synthetic, realistically shaped chat history
(`synthetic`) and appends shaped as the coding agents write their logs (`agent_writes`)."""
