"""The package version, in a module of its own so that what records it (a datastore's manifest)
needs nothing else of the package."""
__version__ = "0.1.0"
