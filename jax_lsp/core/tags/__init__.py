"""Checkpoint-name tags (`checkpoint_name(x, NAME)`): the tags of a file, where a tag's name comes
from, every tag in reach (the workspace and its installed packages), and editor help for names."""
