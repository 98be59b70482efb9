"""Jupyter notebooks and IPython syntax, as one Python module for the analysis."""
