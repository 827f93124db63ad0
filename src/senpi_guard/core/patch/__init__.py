"""A patch is data (`patches/<name>/`) plus pure byte transformations over it.

definition: load the data · fixtures: expand the replayed contexts · apply: render our edit ·
reverse: remove our edit or a hand fix · classify: name the state a file is in.
"""
