"""Privacy feature library (paper Sec. 5): prior library, division, clustering, rounds.

- :mod:`.prior`      load a library (YAML prior / JSON built), sample prompt hints (Sec. 5.1)
- :mod:`.division`   token pseudo-NLL scorers and template/fragment division (Sec. 5.2)
- :mod:`.clustering` embeddings, DBSCAN, attribute assignment by prototypes (Sec. 5.3)
- :mod:`.rounds`     build library round k+1 from confirmed leaks of run k

Heavy modules (torch, transformers) are imported only when division/clustering is used.
"""

from .prior import load_library, parse_library, read_library_document, sample_hints


def pin_torch_threads(n: int) -> None:
    """torch's intra-op threads, set to ``library.torch_threads`` before a scorer or encoder runs:
    a fixed count, so that its float reductions split the same way on every machine."""
    import torch

    torch.set_num_threads(int(n))
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:  # already set once in this process (allowed only before parallel work)
        pass


__all__ = ["load_library", "parse_library", "pin_torch_threads", "read_library_document", "sample_hints"]
