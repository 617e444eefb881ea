"""The store's own signals beside relevance, one module each.

``_entities`` (the entities a cue names; entity terms of graph activation; memories about other
entities kept below the cue's), ``_links`` (co-recall links as the graph reads them), ``_graph``
(graph activation), ``_supersession`` (a replaced memory below its replacement),
``_reinforcement`` (recall dynamics: what a recall writes back). A new signal is a module here
that the pipeline (:mod:`fieldrank.memory._pipeline`) calls at one step.
"""
