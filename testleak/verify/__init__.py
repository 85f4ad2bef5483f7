"""Verification (paper Sec. 4.3): format rules, judge LLM, corpus search, hit window, review.

- :mod:`.rules`   attribute format rules and the placeholder list -> ``{ok, reason}``
- :mod:`.judge`   judge prompt, tolerant verdict parser, verdict records (judged stage)
- :mod:`.index`   local exact-substring index (SQLite FTS5 trigram) over a code corpus
- :mod:`.github`  GitHub REST code search (rate limits, cache, repository ids)
- :mod:`.search`  backend registry (local | github) and the 1..100 hit window (verified stage)
- :mod:`.review`  terminal reviewer, labels, Cohen's kappa, confirmation policies
"""
