"""Gold data: the checksummed manifest and fetcher (``manifest``) and one reader per corpus
(``treebank`` for CoNLL-U, ``ontogum`` for coreference, ``wikitext`` for Wikipedia paragraphs
and Section 3 segments, ``glue``, ``glove``, ``labels`` for the hand-labelled map types)."""
