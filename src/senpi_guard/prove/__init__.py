"""Proof by replay: the node harness, the folder it runs in, which node, remembered replays."""
