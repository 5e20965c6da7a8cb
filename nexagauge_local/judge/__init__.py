"""The local judge: constrained decoding backends, schemas, prompts and the caching client."""
