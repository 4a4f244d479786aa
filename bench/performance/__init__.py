"""Speed and memory: building a realistic store and measuring search, start-up, serving memory, imports,
many clients at once, live sync and the page, each against a baseline taken in the same run."""
