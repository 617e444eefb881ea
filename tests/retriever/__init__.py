"""The retriever layer: BM25, configuration, HybridRetriever, saved indexes, embedders, integrations."""
