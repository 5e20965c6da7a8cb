"""The refalign record block: nexa-gauge's refalign settings.

Its own module (not refalign.py) because three nodes read it: refiner (refine_top_k),
atomic_units (atomic_chunks) and refalign; refalign.py imports the refiner, so the block there
would make an import circle. The refalign SPEC names it for the record reader.
"""

from __future__ import annotations

from pydantic import Field, model_validator

from nexagauge_local.blocks import Block


class RefalignBlock(Block):
    """Embedding alignment of output units to reference units: nexa-gauge's refalign block.

    The keys and defaults are nexa-gauge's (ng_core.types.Refalign), so its records run
    unchanged: `atomic_chunks` (false) has the judge split both sides into atomic factual units
    first (precision/recall/F1 then measure one-to-one claim coverage), `similarity_threshold`
    (0.6) is the cosine a matched pair must reach, and `refine_top_k` (none) keeps at most k
    REFERENCE units by MMR; nexa-gauge's reference refiner is the only place it applies. `top_k`,
    this project's earlier name, is accepted for it; giving both is an error rather than a
    silent choice of one.
    """

    atomic_chunks: bool = False
    similarity_threshold: float = Field(default=0.6, ge=0.0, le=1.0)
    refine_top_k: int | None = Field(
        default=None, ge=1, description="keep at most k reference units (MMR)"
    )
    # Declared (not renamed before validation) so an error names the key the record used.
    top_k: int | None = Field(default=None, ge=1, exclude=True, repr=False,
                              description="alias of refine_top_k")

    @model_validator(mode="after")
    def _top_k_alias(self) -> RefalignBlock:
        if "top_k" in self.model_fields_set:
            if "refine_top_k" in self.model_fields_set:
                raise ValueError("give refine_top_k or its alias top_k, not both")
            # one canonical block whichever name was used (case digests, equality)
            object.__setattr__(self, "refine_top_k", self.top_k)
            object.__setattr__(self, "top_k", None)
            self.__pydantic_fields_set__ = (self.model_fields_set - {"top_k"}) | {"refine_top_k"}
        return self
