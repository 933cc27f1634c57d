"""Reads made on a lent GPU machine and the caches that bring them back here."""
