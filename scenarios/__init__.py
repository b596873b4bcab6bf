"""The scenario files, installed as the data package ``shufflesim.scenarios.files`` (setuptools
``package-dir`` mapping, like ``protocols/``) so that ``shufflesim run scenarios/NAME.toml`` also finds them
outside a source checkout.  No code: the files are TOML (schema in ``shufflesim/scenarios/schema.py``)."""
