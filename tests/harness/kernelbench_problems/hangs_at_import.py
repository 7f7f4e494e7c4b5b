"""Unimportable: importing it never ends (the importer's time limit stops it)."""

import time

while True:
    time.sleep(1)
