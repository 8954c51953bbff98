"""The package version, in one place: the package metadata, the manifests it writes and the
crawler's user agent read it."""

__version__ = "0.1.0"
