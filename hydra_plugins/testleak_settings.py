"""Registers testleak's config-validation resolver for Hydra compositions made outside testleak.

DVC composes conf/ into params.yaml itself when `dvc exp run -S ...` runs (hydra enabled in
.dvc/config); before composing it imports every module of the ``hydra_plugins`` namespace found
under its ``hydra.plugins_path``, the repository root by default. Importing testleak.config
registers ``${testleak_settings:}`` (used by conf/config.yaml's ``validated_by``), which
validates the composed config against testleak/settings/: a bad override then fails the
experiment before any stage runs. Under DVC the resolver's error is a DVC error (and an
OmegaConf resolution error, so OmegaConf passes it on unwrapped): DVC prints it as its own
``ERROR: <the problem>`` line, not as an "unexpected error". No Hydra plugin class is defined.
"""

import testleak.config

try:
    from dvc.exceptions import DvcException
    from omegaconf.errors import InterpolationResolutionError
except ImportError:  # composed by Hydra without DVC: testleak's ConfigError
    pass
else:
    class CompositionError(DvcException, InterpolationResolutionError):
        """A composition that fails testleak's schema, as DVC reports its own errors."""

    testleak.config.COMPOSITION_ERROR = CompositionError
