"""The claims prompt (v2): one request per sentence of the output, with one worked example.

Why per sentence: small judges (the demo's 135M model) answered the v1 prompt - "extract the
atomic claims of this chunk" - with an empty list on every chunk of the bundled sample, so
relevance and grounding never judged anything. Asked about one sentence at a time, a judge
only has to classify it (fact / facts / none); when it cannot split a sentence it answers
"fact" and the sentence itself becomes the claim. "none" (a refusal, a greeting, an opinion)
is a finding, not a failure: a case whose sentences are all "none" has no verifiable claims.

Bump PROMPT_VERSION whenever the text changes: it is part of the judge cache key.
"""

from __future__ import annotations

from nexagauge_local.judge import Messages
from nexagauge_local.judge.prompts import data_sections, messages

PROMPT_VERSION = "claims/v2"

MAX_CLAIMS_PER_SENTENCE = 3
CONTEXT_SENTENCES = 2  # preceding sentences shown to resolve "it", "they", "this"

_TASK = f"""\
Task: say which checkable facts the sentence in data section output_sentence states (it is one \
sentence of an answer under evaluation).
Answer with:
- kind: "fact" when the sentence states one checkable fact and can be understood on its own \
(the sentence itself is then the claim, so claims stays empty); "facts" when it states \
several facts, or only makes sense with the preceding text (data section output_before), e.g. it \
says "it", "they" or "this": then write each fact as one short sentence that names what it is \
about; "none" when it states nothing checkable: a greeting, a refusal, an apology, an opinion, \
a question, advice or an instruction.
- claims: empty unless kind is "facts"; at most {MAX_CLAIMS_PER_SENTENCE}, taken from the \
sentence only, never from the preceding text.
Examples (sentence -> answer):
- "Canberra is the capital of Australia." -> {{"kind":"fact","claims":[]}}
- "It opened in 1889 and is 330 metres tall." (before: "The Eiffel Tower is in Paris.") -> \
{{"kind":"facts","claims":["The Eiffel Tower opened in 1889.","The Eiffel Tower is 330 metres \
tall."]}}
- "Sorry, I can't help with that." -> {{"kind":"none","claims":[]}}"""


def render_sentence(sentence: str, before: str | None) -> Messages:
    """One sentence of the output; the preceding sentences travel along only as context."""
    return messages(
        _TASK + "\n\n" + data_sections({"output_before": before, "output_sentence": sentence})
    )
