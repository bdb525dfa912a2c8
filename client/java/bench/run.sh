#!/usr/bin/env bash
# The Java client's JMH benchmarks (docs/BENCHMARKS.md "Java client"): installs the client
# jar into ~/.m2, builds the benchmarks and runs them. Extra arguments go to JMH, e.g.
#   client/java/bench/run.sh -f 1 -wi 3 -i 5 'SendPath'
set -euo pipefail
cd "$(dirname "$0")"
(cd .. && mvn -q -B install -DskipTests)
mvn -q -B compile dependency:build-classpath -Dmdep.outputFile=target/classpath.txt
exec java -cp "target/classes:$(cat target/classpath.txt)" org.openjdk.jmh.Main "$@"
