"""The description of every shipped config, one module per paper.

``common`` holds the config record (:class:`~common.Config`), the building
blocks every paper uses (dataset, encodings, layer stack, head, optimiser)
and the writers of the YAML files and ``run/tables.tsv``; ``geaet``, ``csa``,
``mna``, ``gt``, ``gps`` and ``baselines`` each add the configs of one paper
(or of the framework's own baselines) with ``build(registry)``.
``run/make_configs.py`` runs them in order and writes the files.
"""
