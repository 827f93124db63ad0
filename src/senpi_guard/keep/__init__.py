"""Keeping the patch across updates: the watcher, the user service, notices."""
