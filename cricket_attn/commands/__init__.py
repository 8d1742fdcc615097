"""The console scripts, one module each (pyproject.toml's `[project.scripts]`), on the top floor: each reads its
arguments (argparse; Hydra over conf/ for train, baselines and ablate), calls the stages below it and writes
what it gives; what every command shares is `cricket_attn.cli`, what predict and simulate share `_scoring`."""
