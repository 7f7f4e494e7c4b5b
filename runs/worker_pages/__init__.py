"""Workers: the worker hosts page, and what the hosts can take (why a queued run waits)."""
