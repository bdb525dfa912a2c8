#!/usr/bin/env bash
# Checks what `mvn deploy` published to the build tree's Maven repository (target/repository;
# docs/CLIENT-JAVA.md "The artifact"): the jar, its sources and javadoc, the pom and their
# checksums in the repository layout, the javadoc of the public API only, the pom asking for
# kafka-clients and slf4j-api as provided (the application brings them). Run after
#   mvn -q -B deploy -DskipTests        (in client/java)
set -euo pipefail
cd "$(dirname "$0")"
V=$(sed -n '0,/<version>/s:.*<version>\(.*\)</version>.*:\1:p' pom.xml)
DIR=target/repository/dev/hotkey/hotkey-kafka-client
A=$DIR/$V/hotkey-kafka-client-$V
fail() { echo "check-artifact: $*" >&2; exit 1; }
for f in "$A.jar" "$A-sources.jar" "$A-javadoc.jar" "$A.pom" "$DIR/maven-metadata.xml"; do
  [ -s "$f" ] || fail "missing $f"
  [ -s "$f.sha1" ] || fail "missing $f.sha1"
done
grep -q "<version>$V</version>" "$DIR/maven-metadata.xml" || fail "maven-metadata.xml lacks $V"
list() { unzip -Z1 "$1"; }
list "$A.jar" | grep -qx 'dev/hotkey/kafka/HotkeyPartitioner.class' || fail "jar lacks HotkeyPartitioner"
list "$A.jar" | grep -q 'Test\.class$' && fail "jar holds test classes"
list "$A-sources.jar" | grep -qx 'dev/hotkey/kafka/internals/PartitionerCore.java' ||
  fail "sources jar lacks the internals"
list "$A-javadoc.jar" | grep -qx 'dev/hotkey/kafka/HotkeyPartitioner.html' ||
  fail "javadoc jar lacks HotkeyPartitioner.html"
list "$A-javadoc.jar" | grep -qx 'dev/hotkey/kafka/consumer/SubstreamMerger.html' ||
  fail "javadoc jar lacks the consumer package"
list "$A-javadoc.jar" | grep -q '^dev/hotkey/kafka/internals/' &&
  fail "javadoc documents the internals package"
python3 - "$A.pom" <<'PY' || fail "the pom's dependencies are not as documented"
import sys, xml.etree.ElementTree as ET
ns = {"m": "http://maven.apache.org/POM/4.0.0"}
deps = {d.find("m:artifactId", ns).text: (d.find("m:scope", ns).text if d.find("m:scope", ns) is not None else "compile")
        for d in ET.parse(sys.argv[1]).getroot().findall("m:dependencies/m:dependency", ns)}
need = {"kafka-clients": "provided", "slf4j-api": "provided"}
bad = {k: v for k, v in need.items() if deps.get(k) != v}
compile_deps = [k for k, v in deps.items() if v in ("compile", "runtime")]
if bad or compile_deps:
    print("deps:", deps, file=sys.stderr)
    sys.exit(1)
PY
echo "check-artifact: $A.{jar,-sources.jar,-javadoc.jar,pom} in the repository layout, checksums, API-only javadoc"
