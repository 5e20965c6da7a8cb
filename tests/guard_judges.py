"""A tiny random-weight judge per guard family: the family's chat template (tests/
guard_templates.py), its special tokens, BOS and EOS, and its answer words in the tokenizer's
corpus, so the engines render, constrain and read logprobs as they would on the real weights.
WildGuard has no template (its format writes the documented text itself)."""

from __future__ import annotations

from pathlib import Path

from tests.guard_templates import QWEN_CATEGORIES, TEMPLATES
from tests.judge_fixtures import CHAT_TEMPLATE, build_tiny_judge

# format -> (special tokens, bos, eos, answer words)
FAMILIES: dict[str, tuple[tuple[str, ...], str, str, tuple[str, ...]]] = {
    "llama_guard": (("<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>",
                     "<|eot_id|>"), "<|begin_of_text|>", "<|eot_id|>",
                    ("safe unsafe S1 S2 S10,S11 unsafe\nS1",)),
    "shieldgemma": (("<bos>", "<eos>", "<start_of_turn>", "<end_of_turn>"), "<bos>", "<eos>",
                    ("Yes No Yes. No.",)),
    "wildguard": (("<s>", "</s>", "<|user|>", "<|assistant|>"), "<s>", "</s>",
                  ("Harmful request: yes\nResponse refusal: no\nHarmful response: yes",)),
    "granite_guardian": (("<|start_of_role|>", "<|end_of_role|>", "<|end_of_text|>"),
                         "<|start_of_role|>", "<|end_of_text|>", ("Yes No",)),
    "qwen3guard": ((), "<|im_start|>", "<|im_end|>",
                   ("Safety: Safe\nCategories: None\nRefusal: No",
                    "Safety: Unsafe\nCategories: Violent, PII\nRefusal: Yes",
                    "Safety: Controversial", ", ".join(QWEN_CATEGORIES))),
}


def build_guard_judge(fmt: str, out_dir: Path) -> Path:
    special, bos, eos, words = FAMILIES[fmt]
    template = TEMPLATES[fmt][0] if fmt in TEMPLATES else CHAT_TEMPLATE
    return build_tiny_judge(out_dir, chat_template=template, extra_special=special,
                            extra_corpus=words, bos=bos, eos=eos)


def guard_profile(fmt: str, weights: Path, backend: str, folder: Path) -> Path:
    """A judge profile file naming the tiny weights and the family's format."""
    path = folder / f"guard-{fmt}-{backend}.toml"
    path.write_text(f'name = "guard-{fmt}"\nbackend = "{backend}"\nweights = "{weights}"\n'
                    f'dtype = "float32"\nmax_model_len = 2048\njudge_format = "{fmt}"\n')
    return path
