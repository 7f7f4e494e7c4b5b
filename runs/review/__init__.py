"""Review: the queue of questions waiting on a reviewer and the question bank's page with its figures."""
