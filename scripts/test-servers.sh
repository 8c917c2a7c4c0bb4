#!/usr/bin/env bash
# test-servers.sh: a Redis and a PostgreSQL server of the tests' own, on
# loopback ports nobody else uses, in a temporary folder, so the fleet and
# PostgreSQL tests run against real servers (never mocks).
#   test-servers.sh start ENVFILE   starts both and writes ENVFILE (sourceable):
#       OB_TEST_REDIS_URL=redis://opbench:PASSWORD@127.0.0.1:PORT
#       OB_TEST_PG_URL=postgresql://opbench:PASSWORD@127.0.0.1:PORT/postgres
#       OB_TEST_SERVERS_DIR=the folder; OB_TEST_REDIS_CONF=its redis.conf
#     Redis requires the ACL user opbench (the default user is off);
#     PostgreSQL logs in with scram-sha-256 only. Where redis-server or
#     PostgreSQL's initdb/pg_ctl are not installed, ENVFILE says
#     OB_TEST_SERVERS=absent and the tests that need them exit 77.
#   test-servers.sh stop ENVFILE    stops both and removes the folder.
# PostgreSQL refuses to run as root: as root, its data folder belongs to
# the system's postgres user (else nobody) and the server runs as that user.
set -u
cmd=${1:-}
envfile=${2:-}
if [ -z "$cmd" ] || [ -z "$envfile" ]; then
  echo "usage: test-servers.sh start|stop ENVFILE" >&2
  exit 2
fi

pg_bin() {
  local d
  for d in /usr/lib/postgresql/*/bin; do
    [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ] && { echo "$d"; return 0; }
  done
  command -v initdb >/dev/null 2>&1 && dirname "$(command -v initdb)" && return 0
  return 1
}

# A port nothing listens on (a server that still loses the race fails to
# start and the caller tries another).
free_port() {
  local p
  for _ in $(seq 1 50); do
    p=$((20000 + RANDOM % 30000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      echo "$p"
      return 0
    fi
  done
  return 1
}

stop() {
  [ -f "$envfile" ] || return 0
  # shellcheck disable=SC1090
  . "$envfile"
  local dir=${OB_TEST_SERVERS_DIR:-}
  [ -n "$dir" ] && [ -d "$dir" ] || { rm -f "$envfile"; return 0; }
  if [ -f "$dir/redis.pid" ]; then
    local rpid; rpid=$(cat "$dir/redis.pid" 2>/dev/null)
    if [ -n "$rpid" ]; then
      kill "$rpid" 2>/dev/null
      for _ in $(seq 1 50); do kill -0 "$rpid" 2>/dev/null || break; sleep 0.1; done
    fi
  fi
  if [ -f "$dir/pg/postmaster.pid" ] && b=$(pg_bin); then
    local u; u=$(cat "$dir/pg.user" 2>/dev/null)
    if [ -n "$u" ]; then runuser -u "$u" -- "$b/pg_ctl" -D "$dir/pg" -m immediate -w stop >/dev/null 2>&1
    else "$b/pg_ctl" -D "$dir/pg" -m immediate -w stop >/dev/null 2>&1; fi
  fi
  rm -rf "$dir"
  rm -f "$envfile"
}

start_redis() {
  local dir=$1 pass=$2 port
  for _ in 1 2 3 4 5; do
    port=$(free_port) || return 1
    cat >"$dir/redis.conf" <<EOF
bind 127.0.0.1
port $port
dir $dir
pidfile $dir/redis.pid
logfile $dir/redis.log
daemonize yes
save ""
appendonly no
protected-mode yes
user default off
user opbench on >$pass ~* &* +@all
EOF
    rm -f "$dir/redis.pid"
    if redis-server "$dir/redis.conf" >/dev/null 2>&1; then
      for _ in $(seq 1 50); do
        if REDISCLI_AUTH=$pass redis-cli --user opbench -p "$port" ping 2>/dev/null | grep -q PONG; then
          echo "$port"
          return 0
        fi
        sleep 0.1
      done
      [ -f "$dir/redis.pid" ] && kill "$(cat "$dir/redis.pid")" 2>/dev/null
    fi
  done
  return 1
}

start_pg() {
  local dir=$1 pass=$2 b=$3 port u=""
  if [ "$(id -u)" -eq 0 ]; then
    if id postgres >/dev/null 2>&1; then u=postgres; else u=nobody; fi
    echo "$u" >"$dir/pg.user"
  fi
  run() { if [ -n "$u" ]; then runuser -u "$u" -- "$@"; else "$@"; fi; }
  mkdir -p "$dir/pg" "$dir/pgsock" "$dir/pglog"
  printf '%s\n' "$pass" >"$dir/pg.pw"
  if [ -n "$u" ]; then chown "$u" "$dir/pg" "$dir/pgsock" "$dir/pglog" "$dir/pg.pw"; fi
  chmod 700 "$dir/pg"
  run "$b/initdb" -D "$dir/pg" -U opbench --pwfile="$dir/pg.pw" --auth=scram-sha-256 \
    -E UTF8 --no-locale >"$dir/initdb.log" 2>&1 || return 1
  rm -f "$dir/pg.pw"
  for _ in 1 2 3 4 5; do
    port=$(free_port) || return 1
    if run "$b/pg_ctl" -D "$dir/pg" -w -t 60 -l "$dir/pglog/pg.log" \
      -o "-c listen_addresses=127.0.0.1 -p $port -c unix_socket_directories=$dir/pgsock -c fsync=off -c full_page_writes=off -c max_connections=200" \
      start >/dev/null 2>&1; then
      echo "$port"
      return 0
    fi
  done
  return 1
}

case $cmd in
stop)
  stop
  exit 0
  ;;
start)
  stop # a folder left by a run that was killed
  b=$(pg_bin)
  if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null || [ -z "$b" ]; then
    echo "OB_TEST_SERVERS=absent" >"$envfile"
    echo "test-servers: redis-server or PostgreSQL (initdb, pg_ctl) is not installed; the tests that need them are skipped" >&2
    exit 0
  fi
  dir=$(mktemp -d /tmp/opbench-servers-XXXXXX) || exit 1
  chmod 755 "$dir"
  pass=$(head -c 18 /dev/urandom | base64 | tr -d '/+=')
  printf 'OB_TEST_SERVERS=up\nOB_TEST_SERVERS_DIR=%s\n' "$dir" >"$envfile"
  if ! rport=$(start_redis "$dir" "$pass"); then
    echo "test-servers: redis-server did not start; its log:" >&2
    cat "$dir/redis.log" >&2 2>/dev/null
    stop
    exit 1
  fi
  printf 'OB_TEST_REDIS_URL=redis://opbench:%s@127.0.0.1:%s\nOB_TEST_REDIS_CONF=%s/redis.conf\nOB_TEST_REDIS_PASSWORD=%s\nOB_TEST_REDIS_PORT=%s\n' \
    "$pass" "$rport" "$dir" "$pass" "$rport" >>"$envfile"
  if ! pport=$(start_pg "$dir" "$pass" "$b"); then
    echo "test-servers: PostgreSQL did not start; its logs:" >&2
    cat "$dir/initdb.log" "$dir/pglog/pg.log" >&2 2>/dev/null
    stop
    exit 1
  fi
  printf 'OB_TEST_PG_URL=postgresql://opbench:%s@127.0.0.1:%s/postgres\n' "$pass" "$pport" >>"$envfile"
  echo "test-servers: redis on 127.0.0.1:$rport, postgresql on 127.0.0.1:$pport, in $dir"
  ;;
*)
  echo "test-servers: unknown command '$cmd' (start or stop)" >&2
  exit 2
  ;;
esac
