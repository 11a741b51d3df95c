"""Run directories (result.json), annotations, leaderboard derivation and importers.

Data flow inside this stage:
    dataset.load_dataset(data_dir, problems_dir)  → Dataset (runs, annotations + quote checks, writeups, problems,
                                                     baselines, diagnostics; never raises for bad input)
    leaderboard.build_boards(dataset)             → [Board] per GPU (cells, ceilings, agent summaries, fast_p)
    leaderboard.export_json / export_csv(boards)  → site/data/leaderboard.json and .csv
    importer.import_kernelbench_hard(...)         → a data directory from a published KernelBench-Hard board
    authoring.new_annotation / check_annotations  → the `kernelbench annotate` commands (cli.py)
"""
