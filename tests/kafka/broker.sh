#!/usr/bin/env bash
# A real single-node Apache Kafka broker (KRaft: broker and controller in one JVM), for the
# cluster tests and the README's local cluster.
#
#   tests/kafka/broker.sh install          jars from Maven Central into $KAFKA_LIB (make kafka)
#   tests/kafka/broker.sh start DIR PORT   fresh storage under DIR, serve KAFKA_HOST:PORT, wait
#   tests/kafka/broker.sh stop DIR         stop the broker started with DIR
#
# The broker listens on KAFKA_HOST (default 127.0.0.1), the controller on PORT+1.
# Needs java 17+ (and mvn for install). KAFKA_LIB defaults
# to target/kafka/lib of this repository. Topics are created on first use, with
# KAFKA_PARTITIONS partitions (default 6).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
LIB=${KAFKA_LIB:-$HERE/../../target/kafka/lib}
HOST=${KAFKA_HOST:-127.0.0.1}

properties() { # DIR PORT
  cat <<P
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@$HOST:$(($2 + 1))
listeners=PLAINTEXT://$HOST:$2,CONTROLLER://$HOST:$(($2 + 1))
advertised.listeners=PLAINTEXT://$HOST:$2
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$1/data
num.partitions=${KAFKA_PARTITIONS:-6}
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=true
P
}

logging() { # DIR
  cat <<P
status = warn
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = $1/server.log
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = FILE
P
}

case "${1:-}" in
  install)
    [ -d "$LIB" ] || mvn -q -B -f "$HERE/pom.xml" dependency:copy-dependencies \
      -DoutputDirectory="$LIB" -DincludeScope=runtime
    ;;
  start)
    DIR=${2:?start DIR PORT}; PORT=${3:?start DIR PORT}
    [ -d "$LIB" ] || { echo "no Kafka jars in $LIB: run make kafka" >&2; exit 1; }
    rm -rf "$DIR" && mkdir -p "$DIR"
    properties "$DIR" "$PORT" > "$DIR/server.properties"
    logging "$DIR" > "$DIR/log4j2.properties"
    CP="$LIB/*"; L="-Dlog4j2.configurationFile=$DIR/log4j2.properties"
    ID=$(java -cp "$CP" kafka.tools.StorageTool random-uuid)
    java -cp "$CP" "$L" kafka.tools.StorageTool format -t "$ID" -c "$DIR/server.properties" > /dev/null
    nohup java -Xms128m -Xmx512m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.awt.headless=true "$L" \
      -cp "$CP" kafka.Kafka "$DIR/server.properties" > "$DIR/stdout.log" 2>&1 &
    echo $! > "$DIR/kafka.pid"
    # Up to 3 minutes: on a 2-core machine running the test jobs side by side, the JVM took
    # longer than the minute this waited before (a CI run failed with the broker mid-start).
    for _ in $(seq 1 1800); do
      grep -q "Kafka Server started" "$DIR/server.log" 2>/dev/null && { echo "kafka ready on $HOST:$PORT"; exit 0; }
      kill -0 "$(cat "$DIR/kafka.pid")" 2>/dev/null || break
      sleep 0.1
    done
    echo "kafka did not start; see $DIR/server.log and $DIR/stdout.log" >&2; exit 1 ;;
  stop)
    DIR=${2:?stop DIR}
    [ -f "$DIR/kafka.pid" ] || exit 0
    PID=$(cat "$DIR/kafka.pid"); kill "$PID" 2>/dev/null || true
    for _ in $(seq 1 300); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$PID" 2>/dev/null || true; rm -f "$DIR/kafka.pid" ;;
  *) echo "usage: $0 install | start DIR PORT | stop DIR" >&2; exit 2 ;;
esac
