"""Which optional package an engine missed when it could not load: the GPU extra's absence is
normal on a CPU install and is said so, in plain words, once."""

from __future__ import annotations

GPU_MODULES = frozenset({"torch", "transformers", "safetensors", "torchaudio"})


def missing_gpu_module(exc: BaseException) -> str | None:
    """The GPU extra's module whose import failed behind ``exc`` (its cause chain), or None."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ImportError) and current.name:
            top = current.name.partition(".")[0]
            if top in GPU_MODULES:
                return top
        current = current.__cause__ or current.__context__
    return None
