"""One EOS set for the grammar and the stopping rule of the hf backend.

A model whose generation config names several EOS ids (Llama-3.1: `<|eot_id|>` and
`<|end_of_text|>`) stops on any of them, while an outlines grammar knows only the tokenizer's.
If an extra EOS id is an ordinary token of the grammar's vocabulary, the grammar allows it
inside a JSON string and the answer would stop there. The tiny judge gets a second EOS id
that is an ordinary word token, and a bias that makes the model pick it wherever it can.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nexagauge_local.judge.hf.grammar import Grammars
from nexagauge_local.judge.hf.processors import eos_aliases
from nexagauge_local.judge.runtime import eos_set, eos_token_ids
from nexagauge_local.judge.schemas import engine_schema_json
from nexagauge_local.judge.types import JudgeRequest
from nexagauge_local.nodes.redteam import verdict_schema
from tests.judge_fixtures import redteam_messages

SCHEMA = verdict_schema("binary_yes_no", True, max_items=2, span_chars=16, reasoning_chars=24)


def test_eos_set_merges_tokenizer_and_generation_config() -> None:
    class Tok:
        eos_token_id = 7

    assert eos_set(Tok(), [7, 9, 11]) == {7, 9, 11}
    assert eos_set(Tok(), 9) == {7, 9}
    assert eos_set(Tok(), None) == {7}
    assert eos_aliases({7, 9, 11}, 7, vocab=10) == [9]  # ids past the vocabulary are dropped
    assert eos_aliases({7, 9}, None, vocab=100) == []


@pytest.fixture
def two_eos_backend(tiny_profile, tmp_path: Path):
    import torch

    from nexagauge_local.judge.hf.backend import HFBackend

    backend = HFBackend(tiny_profile, cache_dir=tmp_path, device="cpu", threads=1)
    tok, model = backend.tokenizer, backend.model
    extra = tok.encode("the", add_special_tokens=False)[0]  # an ordinary word token
    assert extra != tok.eos_token_id
    model.generation_config.eos_token_id = [tok.eos_token_id, extra]
    backend._eos_ids = eos_token_ids(model, tok)
    head = model.lm_head
    biased = torch.nn.Linear(head.in_features, head.out_features, bias=True)
    with torch.no_grad():
        biased.weight.copy_(head.weight)
        biased.bias.zero_()
        biased.bias[extra] = 1e4  # the model takes `extra` wherever the mask allows it
    model.lm_head = biased
    return backend, extra


@pytest.mark.parametrize("engine", ["guidance", "outlines"])
def test_every_eos_id_is_allowed_only_where_the_answer_is_complete(
    two_eos_backend, engine: str
) -> None:
    """Both engines know one EOS id; the backend aligns the others to it, so no answer stops
    inside a string."""
    backend, extra = two_eos_backend
    backend.grammar = engine
    assert backend._eos_ids == {backend.tokenizer.eos_token_id, extra}
    reqs = [JudgeRequest(redteam_messages(i), SCHEMA, 120, node="redteam") for i in range(6)]
    results = backend.generate(reqs)
    assert [r.error for r in results] == [None] * 6
    assert all(r.parsed is not None for r in results)


@pytest.mark.parametrize("engine", ["guidance", "outlines"])
def test_without_the_shared_set_the_extra_eos_ends_answers_inside_a_string(
    two_eos_backend, engine: str
) -> None:
    """The failure the shared set prevents (proves the test above can fail): the grammar's
    own processor alone, under transformers' generate stopping on every EOS id."""
    import torch
    from transformers import GenerationConfig, LogitsProcessorList

    backend, extra = two_eos_backend
    tok, model = backend.tokenizer, backend.model
    vocab = model.get_output_embeddings().weight.shape[0]
    grammar = Grammars(engine, model, tok, vocab).processor(
        engine_schema_json(SCHEMA, False), 1, backend._eos_ids)
    prompt = tok.apply_chat_template(redteam_messages(0), tokenize=False,
                                     add_generation_prompt=True)  # fmt: skip
    ids = torch.tensor([tok(prompt, add_special_tokens=False)["input_ids"]])
    config = GenerationConfig(max_new_tokens=120, do_sample=False,
                              eos_token_id=sorted(backend._eos_ids), pad_token_id=tok.pad_token_id)
    out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids),
                         generation_config=config, logits_processor=LogitsProcessorList([grammar]))
    generated = out[0, ids.shape[1]:].tolist()
    assert generated[-1] == extra and tok.eos_token_id not in generated
    text = tok.decode(generated[:-1], skip_special_tokens=True)
    with pytest.raises(ValueError):
        SCHEMA.model_validate_json(text)
