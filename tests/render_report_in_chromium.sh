#!/bin/sh
# Check that the HTML report renders with its plots in a real browser: installs Debian's chromium
# package when it is missing (needs root and apt), then runs the browser tests, which otherwise
# skip on machines without chromium.
set -e
if ! command -v chromium >/dev/null 2>&1; then
    apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y chromium
fi
cd "$(dirname "$0")/.."
exec python -m pytest tests/test_report_html.py -v "$@"
