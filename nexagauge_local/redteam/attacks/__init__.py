"""Static attack strategies: ways of disguising a probe before the model under test sees it.

Why "static": each is a pure function of the probe and a seed (no attacker model), so an attack
record can be replayed exactly and an audit costs no more model calls than it has disguises.
Three families: encodings (Base64, rot13, hex, leetspeak, look-alike letters, zero-width and
spaced characters), templates (role-play, refusal suppression, prefix injection, fiction,
payload splitting, many-shot, and a user's own template files) and best-of-N augmentation.
"""

from nexagauge_local.redteam.attacks.augment import BestOfN
from nexagauge_local.redteam.attacks.encoding_strategy import (
    CODECS,
    Codec,
    EncodingStrategy,
    encoding_strategies,
)
from nexagauge_local.redteam.attacks.registry import (
    UnknownStrategyError,
    resolve,
    static_strategies,
)
from nexagauge_local.redteam.attacks.strategy import (
    FAMILIES,
    Disguise,
    StaticStrategy,
    Turn,
)
from nexagauge_local.redteam.attacks.template_file import (
    NEUTRAL_MODEL_NAME,
    FileTemplate,
    TemplateFileError,
    load_template_file,
    load_template_files,
)
from nexagauge_local.redteam.attacks.templates import (
    FixedTemplate,
    ManyShot,
    PayloadSplit,
    template_strategies,
)

__all__ = (
    "CODECS",
    "FAMILIES",
    "NEUTRAL_MODEL_NAME",
    "BestOfN",
    "Codec",
    "Disguise",
    "EncodingStrategy",
    "FileTemplate",
    "FixedTemplate",
    "ManyShot",
    "PayloadSplit",
    "StaticStrategy",
    "TemplateFileError",
    "Turn",
    "UnknownStrategyError",
    "encoding_strategies",
    "load_template_file",
    "load_template_files",
    "resolve",
    "static_strategies",
    "template_strategies",
)
