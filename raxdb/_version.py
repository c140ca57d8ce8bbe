"""raxdb's version, alone in a module: the server reads it (server/base/version.py) without
depending on the package's own module, whose lazy attributes lead to raxdb.embed."""

__version__ = "0.1.0"
