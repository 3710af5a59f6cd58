#!/usr/bin/env bash
# The shipped Kubernetes examples (deploy/kubernetes/) hold together:
# the Service selects the Deployment's pods on a port the container names;
# readiness, startup and liveness probes ask /health on it; the Prometheus
# scrape annotations name that port and /metrics; the InferencePool of the
# inference-gateway example selects those pods on that port and its HTTPRoute
# points at it; the grace period covers
# preStop plus zinc's drain deadline (the manifest's --drain-timeout, else
# ZN_SRV_DRAIN_S of src/base/limits.h), and zinc, stopped, says it drains with
# that deadline; and the container's zinc arguments start
# this zinc (model and address replaced: the demo model, 127.0.0.1, port 0),
# which then answers the probe path and drains on SIGTERM with exit 0.
# $1 = build dir.
build=${1:-build}
zinc=$build/zinc
[ -x "$zinc" ] || zinc=./zinc
. "$(dirname "$0")/lib.sh"
Y=deploy/kubernetes/zinc.yaml
tmp=$(mktemp -d); pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
if ! python3 -c 'import yaml' 2>/dev/null; then
  skip "kubernetes example" "python3 has no yaml module (python3-yaml)"; finish deploy; exit
fi
check "kubernetes example: Deployment + Service invariants" python3 - "$Y" "$tmp/args" <<'PY'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
kinds = {d['kind']: d for d in docs}
assert set(kinds) == {'Deployment', 'Service'}, list(kinds)
dep, svc = kinds['Deployment'], kinds['Service']
tpl = dep['spec']['template']
labels = tpl['metadata']['labels']
assert dep['spec']['selector']['matchLabels'].items() <= labels.items(), 'the Deployment does not select its pods'
assert svc['spec']['selector'].items() <= labels.items(), 'the Service does not select the pods'
assert dep['spec']['replicas'] >= 2, 'one replica cannot fail over'
(c,) = tpl['spec']['containers']
ports = {p['name']: p['containerPort'] for p in c['ports']}
for sp in svc['spec']['ports']:
    assert sp['targetPort'] in ports or sp['targetPort'] in ports.values(), sp
for probe in ('readinessProbe', 'startupProbe', 'livenessProbe'):
    g = c[probe]['httpGet']
    assert g['path'] == '/health' and (g['port'] in ports or g['port'] in ports.values()), (probe, g)
a = tpl['metadata']['annotations']
assert a['prometheus.io/scrape'] == 'true' and a['prometheus.io/path'] == '/metrics', a
args = c['args']
assert args[0] == 'serve', args
opt = lambda name: args[args.index(name) + 1]
port = int(opt('--port'))
assert int(a['prometheus.io/port']) == port and port in ports.values(), (a, ports, port)
# zinc's drain deadline: the manifest's --drain-timeout, else the constant zinc uses
# without one (ZN_SRV_DRAIN_S in src/base/limits.h), within its bound (ZN_SRV_MAX_DRAIN_S)
import re
lim = open('src/base/limits.h').read()
const = lambda n: int(re.search(r'#define\s+%s\s+(\d+)' % n, lim).group(1))
drain = int(opt('--drain-timeout')) if '--drain-timeout' in args else const('ZN_SRV_DRAIN_S')
assert 0 <= drain <= const('ZN_SRV_MAX_DRAIN_S'), ('--drain-timeout out of zinc\'s range', drain)
pre = c['lifecycle']['preStop']
pre_s = pre['sleep']['seconds'] if 'sleep' in pre else 0
grace = tpl['spec']['terminationGracePeriodSeconds']
assert grace > pre_s + drain + 5, 'terminationGracePeriodSeconds %d does not cover preStop %d s + drain %d s' % (grace, pre_s, drain)
# the inference gateway example: its pool selects these pods on the container's port
g = {d['kind']: d for d in yaml.safe_load_all(open(sys.argv[1].replace('zinc.yaml', 'inference-gateway.yaml'))) if d}
pool, route = g['InferencePool'], g['HTTPRoute']
assert pool['spec']['selector']['matchLabels'].items() <= labels.items(), 'the InferencePool does not select the pods'
assert [p['number'] for p in pool['spec']['targetPorts']] == [port], pool['spec']['targetPorts']
(ref,) = route['spec']['rules'][0]['backendRefs']
assert ref['kind'] == 'InferencePool' and ref['name'] == pool['metadata']['name'], ref
# the arguments to run here: the demo model, loopback, any free port
args[args.index('-m') + 1] = 'models/zinc-demo-qwen35.gguf'
args[args.index('--host') + 1] = '127.0.0.1'
args[args.index('--port') + 1] = '0'
open(sys.argv[2], 'w').write('\n'.join(args[1:]) + '\n')
open(sys.argv[2] + '.drain', 'w').write('%d\n' % drain)
PY
if [ -s "$tmp/args" ]; then
  mapfile -t args < "$tmp/args"
  "$zinc" serve "${args[@]}" --backend cpu --threads 1 2> "$tmp/err" & pid=$!
  for _ in $(seq 400); do grep -q "zinc: ready:" "$tmp/err" && break; kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
  port=$(sed -n 's|.*listening on http://[^/]*:\([0-9]*\)/.*|\1|p' "$tmp/err" | head -1)
  has "the example's arguments start zinc" "$tmp/err" "zinc: ready:"
  expect "the probe path answers" 200 "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/health")"
  # a pod IP as the Host (what kubelet probes send) is accepted under --allowed-hosts '*'
  expect "the scrape path answers" 200 "$(curl -s -o /dev/null -w '%{http_code}' -H 'Host: 10.1.2.3:8080' "http://127.0.0.1:$port/metrics")"
  kill -TERM "$pid"; wait "$pid"; expect "the example's zinc drains and exits 0" 0 $?; pid=
  # the deadline zinc used is the one the grace period was checked against
  has "zinc drains with the manifest's deadline" "$tmp/err" "draining (at most $(cat "$tmp/args.drain") s)"
fi
finish deploy
