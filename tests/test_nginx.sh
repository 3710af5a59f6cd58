#!/usr/bin/env bash
# Replicas behind an existing load balancer: Debian's nginx, on loopback, in
# front of two `zinc serve` replicas (the demo model), with the shipped example
# config deploy/nginx/zinc.conf (ports replaced; fail_timeout 2 s instead of 10
# so the test need not wait). It shows: requests spread over both replicas;
# server-sent events pass unbuffered (chunks arrive while the stream is made;
# a buffering proxy, as a control, delivers them in a few lumps); a replica
# killed mid-run (kill -9) costs no new request (passive health check + retry
# on the other, proxy_next_upstream); it comes back after fail_timeout; a
# replica drained with SIGTERM finishes its stream while its 503s are retried
# on the other; a stream on a replica that dies is cut (no data: [DONE]) and
# the next request succeeds. nginx runs in the foreground with its own prefix
# and config in a temporary folder, as nobody when the test runs as root.
# $1 = build dir.
build=${1:-build}
zinc=$build/zinc
[ -x "$zinc" ] || zinc=./zinc
M=models/zinc-demo-qwen35.gguf
E2E=tests/e2e
. "$(dirname "$0")/lib.sh"
if ! command -v nginx > /dev/null; then
  skip "nginx in front of two replicas" "no nginx (Debian's package: apt-get install nginx; scripts/deps.sh)"
  finish nginx; exit
fi
tmp=$(mktemp -d)
nd=$(mktemp -d)  # nginx's prefix: its own folder, so nobody may own it
pids=(); ngpid=
cleanup() {
  [ -n "$ngpid" ] && kill -QUIT "$ngpid" 2>/dev/null
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  wait 2>/dev/null; rm -rf "$tmp" "$nd"
}
trap cleanup EXIT

# starts replica NAME (zinc serve ARGS...): sets PORT, PID
start() {
  local name=$1; shift
  "$zinc" serve "$@" -m "$M" --backend cpu --threads 1 --parallel 2 --ctx 4096 --drain-timeout 60 --allowed-hosts zinc \
    2> "$tmp/$name.err" & PID=$!; pids+=("$PID")
  for _ in $(seq 1200); do
    grep -q "zinc: ready:" "$tmp/$name.err" && break
    kill -0 "$PID" 2>/dev/null || break
    sleep 0.05
  done
  PORT=$(sed -n 's|.*listening on http://[^/]*:\([0-9]*\)/.*|\1|p' "$tmp/$name.err" | head -1)
  grep -q "zinc: ready:" "$tmp/$name.err" || { bad "replica $name did not start: $(cat "$tmp/$name.err")"; finish nginx; exit 1; }
}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# via nginx: post PATH BODY -> status; the body in $tmp/b
post() { curl -s -o "$tmp/b" -w '%{http_code}' --max-time 120 -H 'Content-Type: application/json' --data-binary "$2" "$N$1"; }
running() { curl -s --max-time 5 "http://127.0.0.1:$1/metrics" | sed -n 's/^vllm:num_requests_running //p'; }
# a stream through nginx in the background: stream NAME BODY (summary in $tmp/NAME.json); sets SPID
stream() {
  python3 "$E2E/sse_stream.py" "$N/v1/completions" "$2" "$tmp/$1.body" "$tmp/$1.h" > "$tmp/$1.json" & SPID=$!
}
field() { python3 -c "import json; print(json.load(open('$tmp/$1.json'))['$2'])"; }
# which replica runs the one stream in flight: sets X (its port), Y (the other's), XP, YP (pids)
which_runs() {
  X=; for _ in $(seq 400); do
    if [ "$(running "$PA")" = 1 ]; then X=$PA; Y=$PB; XP=$A; YP=$B; return 0; fi
    if [ "$(running "$PB")" = 1 ]; then X=$PB; Y=$PA; XP=$B; YP=$A; return 0; fi
    sleep 0.02
  done
  bad "no replica runs the stream"; return 1
}
# the access log's lines since line $1: status upstream_addrs upstream_statuses uri
log_since() { tail -n +"$(( $1 + 1 ))" "$nd/access.log"; }
log_lines() { wc -l < "$nd/access.log"; }

start a --port 0; A=$PID; PA=$PORT
start b --port 0; B=$PID; PB=$PORT
NP=$(free_port); NB=$(free_port)
N=http://127.0.0.1:$NP

# the shipped example, ports replaced; a main config around it (prefix, logs, temp paths)
sed -e "s/127\.0\.0\.1:8081/127.0.0.1:$PA/; s/127\.0\.0\.1:8082/127.0.0.1:$PB/; s/listen 127\.0\.0\.1:8080/listen 127.0.0.1:$NP/" \
    -e 's/fail_timeout=10s/fail_timeout=2s/' deploy/nginx/zinc.conf > "$nd/zinc.conf"
expect "example config: both replicas and the listener replaced" 3 \
  "$(grep -cE "127\.0\.0\.1:($PA|$PB|$NP)[ ;]" "$nd/zinc.conf")"
mkdir -p "$nd/tmp"
cat > "$nd/nginx.conf" <<EOF
daemon off;
worker_processes 1;
pid $nd/nginx.pid;
error_log $nd/error.log info;
events { worker_connections 512; }
http {
    log_format up '\$status \$upstream_addr \$upstream_status \$request_uri';
    access_log $nd/access.log up;
    client_body_temp_path $nd/tmp/body;
    proxy_temp_path $nd/tmp/proxy;
    fastcgi_temp_path $nd/tmp/fastcgi;
    uwsgi_temp_path $nd/tmp/uwsgi;
    scgi_temp_path $nd/tmp/scgi;
    include $nd/zinc.conf;
    # the control: a proxy that buffers (and ignores zinc's X-Accel-Buffering: no). Over
    # HTTP/1.1 nginx hands each complete chunk of a chunked response on at once, buffering
    # or not, so the control asks the replica in HTTP/1.0: the stream then has no length
    # and ends at close, and a buffering nginx passes it on only in full buffers.
    server {
        listen 127.0.0.1:$NB;
        location / {
            proxy_pass http://zinc;
            proxy_http_version 1.0;
            proxy_buffering on;
            proxy_ignore_headers X-Accel-Buffering;
        }
    }
}
EOF
as=()
if [ "$(id -u)" = 0 ]; then
  chown -R nobody:nogroup "$nd"
  as=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
fi
check "nginx -t" "${as[@]}" nginx -t -p "$nd" -e stderr -c "$nd/nginx.conf"
"${as[@]}" nginx -p "$nd" -e stderr -c "$nd/nginx.conf" 2> "$tmp/nginx.err" & ngpid=$!
for _ in $(seq 200); do
  [ "$(curl -s -o /dev/null -w '%{http_code}' "$N/health")" = 200 ] && break
  kill -0 "$ngpid" 2>/dev/null || break
  sleep 0.05
done
expect "health through nginx" 200 "$(curl -s -o "$tmp/b" -w '%{http_code}' "$N/health")"
if [ "$(id -u)" = 0 ]; then
  expect "nginx runs unprivileged" nobody "$(ps -o user= -p "$ngpid" | tr -d ' ')"
fi
expect "models through nginx" 200 "$(curl -s -o "$tmp/b" -w '%{http_code}' "$N/v1/models")"
has "models: the replica's model" "$tmp/b" '"id":"zinc-demo-qwen35"'

# requests spread over both replicas (round robin)
l0=$(log_lines)
for i in 1 2 3 4; do
  expect "chat $i through nginx" 200 "$(post /v1/chat/completions '{"messages":[{"role":"user","content":"Hi"}],"max_tokens":4}')"
done
for p in "$PA" "$PB"; do
  if log_since "$l0" | grep -q " 127.0.0.1:$p 200 "; then ok; else bad "replica :$p got none of 4 requests: $(log_since "$l0")"; fi
done

# SSE through nginx: the framing byte for byte, and chunks arriving as they are made
body='{"messages":[{"role":"user","content":"Tell me a story."}],"max_tokens":12,"temperature":0'
expect "chat whole" 200 "$(post /v1/chat/completions "$body}")"
python3 -c "import json; print(json.load(open('$tmp/b'))['choices'][0]['message']['content'], end='')" > "$tmp/want"
python3 "$E2E/sse_stream.py" "$N/v1/chat/completions" "$body,\"stream\":true,\"stream_options\":{\"include_usage\":true}}" \
  "$tmp/sb" "$tmp/sh" > /dev/null
check "SSE framing through nginx" python3 "$E2E/sse_check.py" "$tmp/sb" "$tmp/sh" chat usage "$tmp/want"
long='{"prompt":"The old prince","max_tokens":600,"ignore_eos":true,"temperature":0,"stream":true}'
python3 "$E2E/sse_stream.py" "$N/v1/completions" "$long" "$tmp/u.body" "$tmp/u.h" > "$tmp/u.json"
python3 "$E2E/sse_stream.py" "http://127.0.0.1:$NB/v1/completions" "$long" "$tmp/c.body" "$tmp/c.h" > "$tmp/c.json"
echo "unbuffered: $(cat "$tmp/u.json")"; echo "buffered (control): $(cat "$tmp/c.json")"
check "unbuffered: events arrive while the stream is made" python3 -c "
import json; u = json.load(open('$tmp/u.json'))
assert u['status'] == 200 and u['done'], u
assert u['data_reads'] >= 50 and u['t_first'] < 0.5 * u['t_end'], u
"
check "the control (buffering proxy) delivers in lumps: the measure tells them apart" python3 -c "
import json; u = json.load(open('$tmp/u.json')); c = json.load(open('$tmp/c.json'))
assert c['status'] == 200 and c['done'], c
assert c['data_reads'] * 4 < u['data_reads'], (c, u)
"
grep -qi '^x-accel-buffering' "$tmp/u.h" && bad "X-Accel-Buffering reached the client (nginx consumes it)" || ok

# a replica killed mid-run: a long stream runs on one, the other is killed (-9); new
# requests all succeed (the dead one's refusal is retried on the survivor), the stream too
stream l1 '{"prompt":"The","max_tokens":3000,"ignore_eos":true,"stream":true}'; l1=$SPID
which_runs || { finish nginx; exit 1; }
kill -KILL "$YP"; wait "$YP" 2>/dev/null
l0=$(log_lines); fails=0
for i in 1 2 3 4 5 6; do
  [ "$(post /v1/completions '{"prompt":"The old","max_tokens":4}')" = 200 ] || fails=$((fails + 1))
done
expect "replica killed: new requests that failed" 0 "$fails"
if log_since "$l0" | grep -qE "^200 127\.0\.0\.1:$Y, 127\.0\.0\.1:$X 502, 200 "; then ok
else bad "no request retried on the survivor after the dead replica refused it: $(log_since "$l0")"; fi
if [ "$(log_since "$l0" | grep -c "127.0.0.1:$Y")" -le 1 ]; then ok  # passive health check: tried once, then left out
else bad "the dead replica was tried more than once within fail_timeout: $(log_since "$l0")"; fi
wait "$l1"
expect "the stream on the survivor completed" True "$(field l1 done)"

# it comes back on its port; after fail_timeout nginx tries it again and it serves
start y --port "$Y"; ypid=$PID
if [ "$X" = "$PA" ]; then B=$ypid; else A=$ypid; fi
sleep 2.2
l0=$(log_lines)
for i in $(seq 8); do post /v1/completions '{"prompt":"The","max_tokens":2}' > /dev/null; done
if log_since "$l0" | grep -q "^200 127.0.0.1:$Y 200 "; then ok; else bad "the restarted replica got no request: $(log_since "$l0")"; fi

# a replica drained with SIGTERM mid-stream: its stream finishes, the 503s it gives new
# work are retried on the other, it exits 0
stream l2 '{"prompt":"The","max_tokens":3000,"ignore_eos":true,"stream":true}'; l2=$SPID
which_runs || { finish nginx; exit 1; }
kill -TERM "$XP"
sleep 0.1
l0=$(log_lines); fails=0
for i in 1 2 3 4 5 6; do
  [ "$(post /v1/completions '{"prompt":"The old","max_tokens":4}')" = 200 ] || fails=$((fails + 1))
done
expect "replica draining: new requests that failed" 0 "$fails"
wait "$l2"
expect "the draining replica's stream completed" True "$(field l2 done)"
wait "$XP"; expect "the drained replica exits 0" 0 $?
if log_since "$l0" | grep -qE "^200 127\.0\.0\.1:$X, 127\.0\.0\.1:$Y 503, 200 "; then ok
else bad "no 503 of the draining replica was retried on the other: $(log_since "$l0")"; fi

# a stream on a replica that dies is cut: no data: [DONE] (the client retries); the next
# request succeeds on the other
start z --port "$X"; zpid=$PID
if [ "$X" = "$PA" ]; then A=$zpid; else B=$zpid; fi
sleep 2.2
stream l3 '{"prompt":"The","max_tokens":3000,"ignore_eos":true,"stream":true}'; l3=$SPID
which_runs || { finish nginx; exit 1; }
sleep 0.3  # some of it sent
kill -KILL "$XP"; wait "$XP" 2>/dev/null
wait "$l3"
expect "a stream on a killed replica is cut (no [DONE])" False "$(field l3 done)"
expect "the next request succeeds" 200 "$(post /v1/completions '{"prompt":"The old","max_tokens":4}')"

# nginx stops gracefully; the replicas still running drain and exit 0
kill -QUIT "$ngpid"; wait "$ngpid"; expect "nginx exit status" 0 $?; ngpid=
for p in "$A" "$B"; do
  kill -0 "$p" 2>/dev/null || continue
  kill -TERM "$p"; wait "$p"; rc=$?
  [ "$rc" -eq 0 ] || bad "replica $p exited $rc on SIGTERM"
done
pids=()
if grep -E "\[(emerg|crit|alert)\]" "$nd/error.log" "$tmp/nginx.err" > "$tmp/ngbad" 2>/dev/null; then
  bad "nginx errors: $(head -5 "$tmp/ngbad")"
else ok; fi
if grep -lE "AddressSanitizer|LeakSanitizer|runtime error" "$tmp"/*.err > /dev/null 2>&1; then
  bad "sanitizer reports: $(grep -hE -A5 "AddressSanitizer|LeakSanitizer|runtime error" "$tmp"/*.err | head -30)"
else ok; fi
finish nginx
