"""Tasks and suites: the task pages, the suites and a suite study's scoreboard."""
