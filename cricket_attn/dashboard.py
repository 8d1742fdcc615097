"""What `make dashboard` shows (`mlflow ui` on the project's store): links to a run, to the experiment's
training runs and to the saved comparison view, and that view itself."""

from __future__ import annotations

import base64
import json
import zlib

import mlflow
from mlflow.tracking import MlflowClient

from cricket_attn.tracking import experiment_id

UI_VIEW = "workflowType=machine_learning"


def dashboard_url(
    uri: str, experiment: str, run_id: str | None = None, comparison: bool = False, host: str = "http://127.0.0.1:5000"
) -> str:
    """Where `make dashboard` shows a run, the comparison view (in charts), or the experiment's training runs."""
    base = f"{host}/#/experiments/{experiment_id(uri, experiment)}"
    if run_id:
        return f"{base}/runs/{run_id}?{UI_VIEW}"
    if comparison:
        return f"{base}/runs?viewStateShareKey={COMPARISON_VIEW}&compareRunsMode=CHART&{UI_VIEW}"
    return f"{base}/runs?{UI_VIEW}"


# The saved view `make dashboard` offers: MLflow 3.17's UI keeps saved views as experiment tags
# `mlflow.sharedViewState.<id>` holding its page state, deflated. One view, overwritten by each comparison.
COMPARISON_VIEW = "cricket-attn-comparison"
COMPARISON_METRICS = ("test/log_loss", "test/ece", "paired/diff_vs_transformer", "test/brier")


def save_comparison_view(uri: str, experiment: str, comparison: str) -> None:
    """A saved view of the experiment, `transformer vs baselines`: the runs of one comparison (the tag
    `comparison`), with bar charts and table columns of test log loss, ECE, the paired difference from
    the transformer and Brier score."""
    section = COMPARISON_VIEW
    charts = [
        {
            "uuid": f"{section}-{i}",
            "type": "BAR",
            "runsCountToCompare": 10,
            "metricSectionId": section,
            "deleted": False,
            "isGenerated": False,
            "displayName": key,
            "metricKey": key,
        }
        for i, key in enumerate(COMPARISON_METRICS)
    ]
    state = {
        "searchFilter": f"tags.comparison = '{comparison}'",
        "orderByKey": "attributes.start_time",
        "orderByAsc": True,
        "startTime": "ALL",
        "lifecycleFilter": "Active",
        "datasetsFilter": [],
        "modelVersionFilter": "All Runs",
        "runsHiddenMode": "SHOW_ALL",
        "selectedColumns": [f"metrics.`{key}`" for key in COMPARISON_METRICS] + ["attributes.`Dataset`"],
        "columnOrder": [],
        "columnWidths": {},
        "compareRunSections": [
            {
                "uuid": section,
                "name": "transformer vs baselines, test seasons",
                "display": True,
                "isReordered": True,
                "deleted": False,
                "isGenerated": False,
            }
        ],
        "compareRunCharts": charts,
        "viewMaximized": False,
        "runListHidden": False,
        "isAccordionReordered": True,
        "useGroupedValuesInCharts": True,
        "hideEmptyCharts": True,
        "groupBy": None,
        "groupsExpanded": {},
        "globalLineChartConfig": {"xAxisKey": "step", "lineSmoothness": 0, "selectedXAxisMetricKey": ""},
    }
    now = mlflow.utils.time.get_current_time_millis()
    packed = "deflate;" + base64.b64encode(zlib.compress(json.dumps(state).encode())).decode()
    value = {"name": "transformer vs baselines", "createdAt": now, "updatedAt": now, "state": packed}
    MlflowClient(uri).set_experiment_tag(
        experiment_id(uri, experiment), f"mlflow.sharedViewState.{COMPARISON_VIEW}", json.dumps(value)
    )
