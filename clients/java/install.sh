#!/usr/bin/env bash
# Installs the Java client stacks' libraries (pom.xml's pinned versions and
# their dependencies) into $1/java/lib, where Client.java's class path
# points. A no-op when the same pom.xml was installed there before.
set -euo pipefail
dest="${1:?usage: install.sh DESTINATION (scripts/install-clients.sh passes \$TLSBENCH_CLIENTS)}/java"
here="$(cd "$(dirname "$0")" && pwd)"
stamp="$(sha256sum "$here/pom.xml" | cut -d' ' -f1)"
if [ -f "$dest/lib/.installed" ] && [ "$(cat "$dest/lib/.installed")" = "$stamp" ]; then
  exit 0
fi
for tool in java mvn; do
  command -v "$tool" >/dev/null || { echo "clients/java: $tool is not installed (Debian: apt-get install openjdk-17-jdk-headless maven)" >&2; exit 1; }
done
mkdir -p "$dest"
tmp="$(mktemp -d "$dest/lib.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
if ! log="$(mvn -q -B -f "$here/pom.xml" dependency:copy-dependencies -DoutputDirectory="$tmp" 2>&1)"; then
  echo "$log" | tail -n 20 >&2
  echo "clients/java: mvn could not fetch the pinned libraries from Maven Central (above)" >&2
  exit 1
fi
echo "$stamp" > "$tmp/.installed"
# Swap whole, so that a changed pin leaves no old jar on the class path.
rm -rf "$dest/lib.old"
[ -d "$dest/lib" ] && mv "$dest/lib" "$dest/lib.old"
mv "$tmp" "$dest/lib"
rm -rf "$dest/lib.old"
