"""sacreBLEU's 13a tokenizer, with its one hot regular expression done by str.translate.

Why: after the counting (overlap.py), sacreBLEU's tokenizer was the largest cost left in
refmatch. Its first rule, `re.sub(r'([\\{-\\~\\[-\\` -\\&\\(-\\+\\:-\\@\\/])', r' \\1 ', line)`, puts
spaces around every ASCII symbol, and the space itself is in its class: every space of every
text is one match, and on Python 3.11 each match expands the `\\1` template in Python code
(re._parser.expand_template). The rule matches one character at a time and replaces each with
itself between spaces, so a translation table over the same characters is the same function;
the table is built from sacreBLEU's own compiled pattern, character by character, so it cannot
drift from it. The other rules look at neighbours and match rarely; they run as sacreBLEU's
own patterns. tests/test_overlap.py compares the result with `Tokenizer13a` on random text.
"""

from __future__ import annotations

from functools import lru_cache

from sacrebleu.tokenizers.tokenizer_re import TokenizerRegexp

_RULES = TokenizerRegexp()._re
_SPACED, _SPACED_REPL = _RULES[0]
if _SPACED_REPL != r" \1 ":  # pragma: no cover - a future sacreBLEU
    raise ImportError("sacreBLEU's first 13a rule changed: nexagauge_local/scoring/tok13a.py needs a look")
# The pattern is one ASCII character class, so 0..127 covers every character it matches.
_TABLE = {c: f" {chr(c)} " for c in range(128) if _SPACED.fullmatch(chr(c))}


@lru_cache(maxsize=2**16)  # as sacreBLEU's Tokenizer13a: a reference repeats across cases
def tokenize_13a(line: str) -> str:
    """`sacrebleu.tokenizers.tokenizer_13a.Tokenizer13a()(line)`, step for step."""
    line = line.replace("<skipped>", "")
    line = line.replace("-\n", "")
    line = line.replace("\n", " ")
    if "&" in line:
        line = line.replace("&quot;", '"')
        line = line.replace("&amp;", "&")
        line = line.replace("&lt;", "<")
        line = line.replace("&gt;", ">")
    line = f" {line} ".translate(_TABLE)
    for pattern, repl in _RULES[1:]:
        line = pattern.sub(repl, line)
    return " ".join(line.split())
