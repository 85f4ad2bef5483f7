"""Registers testleak's config-validation resolver for Hydra compositions made outside testleak.

DVC composes conf/ into params.yaml itself when `dvc exp run -S ...` runs (hydra enabled in
.dvc/config); before composing it imports every module of the ``hydra_plugins`` namespace found
under its ``hydra.plugins_path``, the repository root by default. Importing testleak.config
registers ``${testleak_settings:}`` (used by conf/config.yaml's ``validated_by``), which
validates the composed config against testleak/settings.py: a bad override then fails the
experiment with one line per problem before any stage runs. No Hydra plugin class is defined.
"""

import testleak.config  # noqa: F401  (registers the resolver)
