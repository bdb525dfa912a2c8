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
# Each listing is read whole before grep looks at it: `unzip | grep -q` under pipefail fails when
# grep exits at its first match and unzip, still writing, dies of SIGPIPE.
command -v unzip >/dev/null || fail "unzip is not installed"
JAR=$(unzip -Z1 "$A.jar")
SRC=$(unzip -Z1 "$A-sources.jar")
DOC=$(unzip -Z1 "$A-javadoc.jar")
grep -qx 'dev/hotkey/kafka/HotkeyPartitioner.class' <<<"$JAR" || fail "jar lacks HotkeyPartitioner"
grep -q 'Test\.class$' <<<"$JAR" && fail "jar holds test classes"
grep -qx 'dev/hotkey/kafka/internals/PartitionerCore.java' <<<"$SRC" ||
  fail "sources jar lacks the internals"
grep -qx 'dev/hotkey/kafka/HotkeyPartitioner.html' <<<"$DOC" ||
  fail "javadoc jar lacks HotkeyPartitioner.html"
grep -qx 'dev/hotkey/kafka/consumer/SubstreamMerger.html' <<<"$DOC" ||
  fail "javadoc jar lacks the consumer package"
grep -q '^dev/hotkey/kafka/internals/' <<<"$DOC" &&
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
