"""Shared fixtures: real Cricsheet match files and the tables built from them."""

from __future__ import annotations

import functools
import os
from pathlib import Path

# The tests' models are tiny: a second thread only adds hand-offs, and on a busy 2-core machine (CI, or
# training beside) two threads waiting on each other made the simulation tests ten times slower. Set
# before torch is imported, so the commands and notebook kernels the tests start run on one thread too
# (the default run: 482 s with them on one thread beside two training runs; CI's last, without: 702 s).
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import pytest
import torch

from cricket_attn.config import load_data_config
from cricket_attn.data.deliveries import Ingested, PhaseRules, build_tables
from cricket_attn.data.sources import MatchFile, iter_match_files

FIXTURES = Path(__file__).parent / "fixtures" / "cricsheet"
# The real conf/ tree's training, shrunk to seconds: the fixture matches, a tiny model, two epochs, one refitted
# member (every model a test simulates rolls each member ball by ball; the ensembles' own tests ask for two).
TINY_TRAINING = [
    f"data.sources=[{FIXTURES}]",
    "data.competition_min_count=500",
    "data.batch_size=8",
    "model.d_model=8",
    "model.n_heads=2",
    "model.n_layers=1",
    "model.numeric_hidden=16",
    "trainer.max_epochs=2",
    "optim.warmup_steps=2",
    "data.teacher.folds=3",
    "data.trees.num_iterations=20",
    "ensemble=1",
]
# Session fixtures that train a run: a test that needs one is end-to-end (`-m "not e2e"` leaves it out).
TRAINED_RUNS = {"tracked_run", "baselines_run"}

torch.set_num_threads(1)


def pytest_collection_modifyitems(items):
    for item in items:
        if TRAINED_RUNS & set(item.fixturenames):
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="session", autouse=True)
def the_projects_store_untouched():
    """No test writes to the project's own MLflow store (a command's default): each names a store of its own
    under its tmp_path, or --no-mlflow."""
    from cricket_attn.config import PROJECT_ROOT

    store = PROJECT_ROOT / "mlflow.db"
    before = store.stat().st_mtime_ns if store.exists() else None
    yield
    after = store.stat().st_mtime_ns if store.exists() else None
    assert after == before, f"a test wrote to {store}: give it a store of its own (tests/conftest.empty_store)"


@pytest.fixture(scope="session")
def data_config():
    return load_data_config("ipl")


@pytest.fixture(scope="session")
def phases(data_config) -> PhaseRules:
    return PhaseRules.from_config(data_config.phases)


@pytest.fixture(scope="session")
def fixture_tables(phases) -> Ingested:
    """The deliveries and matches tables of the 20 real fixture matches."""
    return build_tables(iter_match_files([FIXTURES]), phases)


@pytest.fixture(scope="session")
def deliveries(fixture_tables):
    return fixture_tables.deliveries


def match_file(match_id: str) -> MatchFile:
    path = FIXTURES / f"{match_id}.json"
    return MatchFile(str(path), match_id, path.read_bytes())


@pytest.fixture(scope="session")
def ipl_tables(phases, data_config) -> Ingested:
    """The whole embedded IPL archive (downloaded once into data/raw/ if it is not there yet)."""
    from cricket_attn.config import project_path
    from cricket_attn.data.deliveries import load_tables

    return load_tables(None, phases, data_dir=project_path(data_config.data_dir))


@functools.cache
def _empty_store_template() -> Path:
    """An empty SQLite MLflow store, made once per test process in a folder removed when the process ends: in
    memory (/dev/shm) where there is one, since making the tables commits each of MLflow's migrations to disk
    (6 s on a disk, 1 s in memory)."""
    import atexit
    import shutil
    import tempfile

    from mlflow import MlflowClient

    from cricket_attn.tracking import quiet_store_creation

    memory = Path("/dev/shm")
    folder = Path(tempfile.mkdtemp(prefix="empty-store-", dir=memory if os.access(memory, os.W_OK) else None))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    with quiet_store_creation():  # its lines on making the tables: not a test's
        MlflowClient(f"sqlite:///{folder / 'mlflow.db'}").search_experiments()  # creates and migrates the tables
    return folder / "mlflow.db"


def empty_store(folder: Path, name: str = "mlflow.db") -> str:
    """A SQLite MLflow store at `folder`/`name`: a copy of one made empty once per test process (MLflow builds a
    new store's tables in seconds), unless the file is there already. Tests of how a new store is made make
    theirs themselves."""
    import shutil

    path = folder / name
    if not path.exists():
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(_empty_store_template(), path)
    return f"sqlite:///{path}"


def tiny_train_config(folder: Path, *extra: str, new_store: bool = False):
    """The real conf/ tree, shrunk: fixture matches, a tiny model, two epochs, MLflow in `folder` (an empty
    store's copy; `new_store`: none there, for the run to make or, refused, to leave unmade)."""
    from hydra import compose, initialize_config_dir

    from cricket_attn.config import CONF_DIR

    overrides = [
        *TINY_TRAINING,
        f"data.data_dir={folder / 'data'}",
        f"paths.output_dir={folder / 'run'}",
        "paths.mlflow_uri=" + (f"sqlite:///{folder / 'mlflow.db'}" if new_store else empty_store(folder)),
        *extra,
    ]
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose(config_name="config", overrides=overrides)


@pytest.fixture(scope="session")
def tracked_run(tmp_path_factory):
    """One tiny default-protocol run (fit, refit, test) on the fixture matches, tracked in MLflow."""
    from cricket_attn.training.train import train

    folder = tmp_path_factory.mktemp("tracked")
    cfg = tiny_train_config(folder)
    results = train(cfg)
    return {
        "folder": folder,
        "cfg": cfg,
        "results": results,
        "uri": cfg.paths.mlflow_uri,
        "run_id": results["mlflow_run_id"],
    }


@pytest.fixture(scope="session")
def baselines_run(tracked_run):
    """cricket-attn-baselines on the fixture matches, paired against `tracked_run`, in its MLflow store."""
    from hydra import compose, initialize_config_dir

    from cricket_attn.config import CONF_DIR
    from cricket_attn.training.baselines import run_baselines

    folder = tracked_run["folder"]
    overrides = [
        f"data.sources=[{FIXTURES}]",
        f"data.data_dir={folder / 'data'}",
        f"paths.output_dir={folder / 'bl'}",
        f"paths.mlflow_uri={tracked_run['uri']}",
        "baselines.n_boot=200",
        "data.teacher.folds=3",  # the tracked run's teacher settings: its refit's teacher is the trees baseline
        "data.trees.num_iterations=20",
    ]
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose(config_name="baselines", overrides=overrides)
    return {"table": run_baselines(cfg), "folder": folder / "bl", "cfg": cfg}


def untrained_model(encoder, train=None, *, seed: int = 0, d_model: int = 8, n_layers: int = 1):
    """A tiny untrained transformer for an encoder, in eval mode (what a ball reads and how a simulation runs
    do not depend on how good the model is); given the training balls, its outcomes at their class rates, so
    innings last as long as real ones."""
    from cricket_attn.data.deliveries import class_frequencies
    from cricket_attn.model import CricketTransformer, ModelConfig

    torch.manual_seed(seed)
    dims = {**encoder.model_dims(), "numeric_quantiles": None, "numeric_embedding": "mlp"}
    model = CricketTransformer(ModelConfig(**dims, d_model=d_model, n_heads=2, n_layers=n_layers)).eval()
    if train is not None:
        rates = torch.tensor(class_frequencies(train).to_numpy(), dtype=torch.float32)
        with torch.no_grad():
            model.head.bias.copy_(torch.log(rates))
    return model


@pytest.fixture(scope="session")
def fixture_simulator(fixture_tables, phases):
    """A simulator over the fixture matches: an encoder fitted on their seasons to 2023, an untrained tiny
    model (the rules of the game do not depend on how good it is), their scorebook and bowling usage."""

    from cricket_attn.data.sequences import SequenceEncoder
    from cricket_attn.simulation.rollout import Simulator
    from cricket_attn.simulation.rules import BowlingUsage
    from cricket_attn.simulation.scorebook import Scorebook

    d = fixture_tables.deliveries
    train = d[d["season"] <= 2023]
    encoder = SequenceEncoder.fit(train, min_count=5)
    model = untrained_model(encoder, train)
    return Simulator(model, encoder, phases, Scorebook.fit(train), BowlingUsage.build(d))
