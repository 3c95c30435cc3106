#!/usr/bin/env bash
# System packages the tests and the main job use (Debian names). Installed when
# this runs as root and one is missing; elsewhere it only says what is missing
# (the tests that need it then skip, naming the package — except under CI=true).
set -euo pipefail
PACKAGES=(dovecot-imapd chromium fonts-noto-cjk postgresql)
missing=()
for package in "${PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$package")
    fi
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "installing system packages: ${missing[*]}" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
else
    echo "note: system packages missing (not root, not installing): ${missing[*]}" >&2
fi
