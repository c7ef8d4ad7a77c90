#!/usr/bin/env bash
# Makes sure a headless Chromium is there for the dashboard's browser tests: Debian's
# chromium-headless-shell (else chromium), installed with apt when missing — as root, or with a
# password-less sudo. Nothing is downloaded by npm. CHROMIUM_PATH set: nothing to do.
# Called by `npm test` (jest's global setup) and by .ci/run.
set -euo pipefail

[[ -n "${CHROMIUM_PATH:-}" ]] && exit 0
for p in chromium-headless-shell chromium; do command -v "$p" >/dev/null 2>&1 && exit 0; done
for p in /usr/lib/chromium/chromium-headless-shell /usr/lib/chromium/chromium; do [[ -x "$p" ]] && exit 0; done

if ! command -v apt-get >/dev/null 2>&1; then
  echo "ensure-chromium: no Chromium and no apt-get; install Chromium and set CHROMIUM_PATH" >&2
  exit 1
fi
sudo_cmd=()
if [[ "$(id -u)" != 0 ]]; then
  if ! sudo -n true 2>/dev/null; then
    echo "ensure-chromium: no Chromium; install it with: sudo apt-get install chromium-headless-shell" >&2
    exit 1
  fi
  sudo_cmd=(sudo -n)
fi
echo "ensure-chromium: apt-get install chromium-headless-shell" >&2
export DEBIAN_FRONTEND=noninteractive
install() { "${sudo_cmd[@]}" apt-get install -y -qq "$1" >/dev/null; }
install chromium-headless-shell || { "${sudo_cmd[@]}" apt-get update -qq && { install chromium-headless-shell || install chromium; }; }
