"""Import nltk without the scipy and scikit-learn imports it makes for features unused here.

nltk's package `__init__` imports every subpackage, and three of them import optional libraries
when present: `nltk.metrics.association` (scipy.stats, for collocation scoring),
`nltk.parse.transitionparser` (scipy.sparse and scikit-learn's SVM) and `nltk.classify.scikitlearn`
(a scikit-learn wrapper). On a 2-core host those imports were 0.6 s of a 1-record run. Each sits
in `try/except ImportError` inside nltk, so hiding the packages while nltk first loads makes nltk
skip them; the names are restored at once, so scipy and scikit-learn import normally afterwards
for whoever needs them. Nothing in this project uses those nltk features. No library offers a
lighter nltk entry point: any `nltk.x` import runs the package `__init__` first.
"""

from __future__ import annotations

import sys

# scipy itself when nothing loaded it yet, else the two submodules nltk would pull in
_OPTIONAL = ("scipy", "scipy.stats", "scipy.sparse", "sklearn")


def load_nltk() -> None:
    """Import nltk once, skipping its optional scipy.stats / scikit-learn imports."""
    if "nltk" in sys.modules:
        return
    hidden = [name for name in _OPTIONAL if name not in sys.modules]
    for name in hidden:
        sys.modules[name] = None  # type: ignore[assignment]  # makes `import name` raise ImportError
    try:
        import nltk  # noqa: F401
    finally:
        for name in hidden:
            if sys.modules.get(name, ...) is None:
                del sys.modules[name]
