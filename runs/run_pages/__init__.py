"""Runs and their steps: the runs list and a run's page, its feed, forks, trace import and export, the compare
page and studies."""
