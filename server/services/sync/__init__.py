"""Keeping the store in step with the agents' logs: the background sync a server runs
(`background`) and the live watcher (`watching`)."""
