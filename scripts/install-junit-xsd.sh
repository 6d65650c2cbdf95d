#!/usr/bin/env bash
# Installs Jenkins xunit's junit-10.xsd, the schema Jenkins reads JUnit
# reports with, under /opt/tlsbench-junit, where internal/gate's
# TestJUnitSchema validates tlsbench's --junit output against it (with
# xmllint, from Debian's libxml2-utils). The schema comes from pytest's
# source package on PyPI, which carries it for pytest's own JUnit tests
# (testing/example_scripts/junit-10.xsd, MIT). Idempotent.
set -euo pipefail

version=9.0.2
sha256=75186651a92bd89611d1d9fc20f0b4345fd827c41ccd5c299a868a05d70edf11
dest=/opt/tlsbench-junit
[ -s "$dest/junit-10.xsd" ] && exit 0

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sdist="$tmp/pytest-$version.tar.gz"
python3 -m pip download --quiet --disable-pip-version-check --no-deps --no-binary :all: \
  --dest "$tmp" "pytest==$version" >/dev/null
echo "$sha256  $sdist" | sha256sum --check --quiet
tar -xzf "$sdist" -C "$tmp" "pytest-$version/testing/example_scripts/junit-10.xsd"
install -D -m 0644 "$tmp/pytest-$version/testing/example_scripts/junit-10.xsd" "$dest/junit-10.xsd"
echo "installed: junit-10.xsd (from pytest $version's source package) in $dest"
