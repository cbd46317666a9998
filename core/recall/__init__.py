"""Recall (SPEC §4, §6): which memories a question brings back, in what order. It reads the
store and knows nothing of the memory operations above it.

===============  ====================================================================
``score``        the formula: relevance × freshness × importance × frequency, top-k, floor
``index``        :class:`RecallIndex`: the in-memory columns, spaces and lexical index
``lexical``      BM25 over stems, kept in step with the store
``scores``       hybrid relevance: BM25 and calibrated cosines, per embedder and language
``vectors``      the ``vectors`` table and the vector spaces (the English half for English)
``parts``        a record's clauses, each as relevant as itself
``file``         the persisted index (``<store>.index``)
``calibration``  the background cosine ``b`` measured on the owner's own store
===============  ====================================================================
"""
