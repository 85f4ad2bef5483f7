"""Privacy feature library (paper Sec. 5): prior library, division, clustering, rounds.

- :mod:`.prior`      load a library (YAML prior / JSON built), sample prompt hints (Sec. 5.1)
- :mod:`.division`   token pseudo-NLL scorers and template/fragment division (Sec. 5.2)
- :mod:`.clustering` embeddings, DBSCAN, attribute assignment by prototypes (Sec. 5.3)
- :mod:`.rounds`     build library round k+1 from confirmed leaks of run k

Heavy modules (torch, transformers) are imported only when division/clustering is used.
"""

from .prior import load_library, parse_library, read_library_document, sample_hints

__all__ = ["load_library", "parse_library", "read_library_document", "sample_hints"]
