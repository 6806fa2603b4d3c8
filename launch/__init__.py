"""Where processes are wired: the ``strata`` command line and the standalone launcher.

The only package that imports every role; no role imports it.
"""
