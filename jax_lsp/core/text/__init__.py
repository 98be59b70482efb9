"""Text in, syntax trees out: decoding, the recovering and lazy parse, newer syntax, Python
versions, and which files are worth parsing."""
