#!/usr/bin/env bash
# The installation's tests: the Helm chart, deploy/ as its rendering, the examples, the
# alerting rules and the dashboard, against the real tools (helm, kubectl, promtool, the
# Grafana dashboard schema, kubernetes-validate) and the test tier's real kube-apiserver.
# Needs tests/helm/build.sh and tests/k8s/build.sh first (scripts/test.sh runs both), as root.
# Usage: tests/helm/test.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
bin="${CARGO_TARGET_DIR:-$root/target}/k8s"
helm="$bin/helm" kubectl="$bin/kubectl"
for tool in "$helm" "$kubectl" "$bin/dashlint" "$bin/spinel-k8s"; do
  [ -x "$tool" ] || { echo "tests/helm/test.sh: $tool is missing: run tests/helm/build.sh and tests/k8s/build.sh" >&2; exit 1; }
done
command -v promtool >/dev/null || { echo "tests/helm/test.sh: promtool is missing (scripts/install-deps.sh test installs Debian's prometheus)" >&2; exit 1; }
chart=deploy/helm/spinel
work=$(mktemp -d /run/spinel-test.helm.XXXXXX)
cp_pid=""
cleanup() { [ -n "$cp_pid" ] && kill "$cp_pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
fail() { echo "tests/helm/test.sh: $*" >&2; exit 1; }
pass=0
ok() { pass=$((pass + 1)); echo "ok - $*"; }

# --- the chart -----------------------------------------------------------------------------
"$helm" lint --strict "$chart" >/dev/null || fail "helm lint --strict failed"
# The two non-default value sets: another namespace, prefix, shielding, NICs and the DRA driver;
# monitoring on.
cat > "$work/other.yaml" <<'EOF'
namespace: {name: roce-system}
labelPrefix: fabric.example.com/
image: {repository: registry.example.com/ml/spinel, tag: 0.1.0-rc.1, pullPolicy: Always, pullSecrets: [{name: regcred}]}
agent: {nics: "pattern:ens*np*", shielding: true, minSpeedMbps: 200000, minMtu: 4200, tolerations: [{key: gpu, operator: Exists}]}
dra: {enabled: true}
cni: {binDir: /var/lib/cni/bin, force: true, settings: {logLevel: info, lockTimeoutMs: 20000}}
controller: {replicas: 3}
scheduler: {replicas: 1, bind: true, weight: 10, resource: amd.com/gpu}
EOF
# The third: monitoring on, into a namespace the operator made (create: false).
cat > "$work/monitoring.yaml" <<'EOF'
namespace: {name: spinel-monitoring, create: false}
monitoring:
  prometheusRule: {enabled: true, labels: {release: kube-prometheus-stack}}
  podMonitors: {enabled: true}
  grafanaDashboard: {enabled: true}
EOF
for set in default other monitoring; do
  args=()
  [ $set = default ] || args=(-f "$work/$set.yaml")
  "$helm" lint --strict "$chart" "${args[@]}" >/dev/null || fail "helm lint ($set values)"
  "$helm" template spinel "$chart" --include-crds "${args[@]}" > "$work/$set.rendered.yaml"
done
grep -q 'namespace: roce-system' "$work/other.rendered.yaml" && ! grep -q 'spinel-system' "$work/other.rendered.yaml" \
  || fail "the namespace value does not reach every object"
! grep -q '^kind: Namespace' "$work/monitoring.rendered.yaml" || fail "namespace.create=false still renders the Namespace"
grep -q "'fabric.example.com/'" "$work/other.rendered.yaml" && grep -q -- '--label-prefix=fabric.example.com/' "$work/other.rendered.yaml" \
  || fail "the label prefix does not reach the admission policy and the components"
grep -q 'taint: true' "$work/other.rendered.yaml" && grep -q -- '- --force' "$work/other.rendered.yaml" \
  && grep -q 'path: /var/lib/cni/bin' "$work/other.rendered.yaml" || fail "shielding, CNI force or binDir not rendered"
# The DRA driver only when asked for: its RBAC, admission policy, DeviceClasses, the agent's
# configuration and the kubelet plugin's host paths.
for want in 'kind: DeviceClass' 'name: spinel-agent-own-resourceslices' "'system:serviceaccount:roce-system:spinel-agent'" \
            'mountPath: /var/lib/kubelet/plugins_registry' 'path: /var/run/cdi'; do
  grep -q -- "$want" "$work/other.rendered.yaml" || fail "dra.enabled does not render: $want"
done
grep -A1 '^    dra:' "$work/other.rendered.yaml" | grep -q 'enabled: true' || fail "dra.enabled does not reach the agent's configuration"
! grep -q 'resource.k8s.io\|plugins_registry' "$work/default.rendered.yaml" || fail "the default values render the DRA driver"
# Values the schema refuses, and the stubbed TLS, fail with their names.
out=$("$helm" template spinel "$chart" --set agent.shieldingg=true 2>&1) && fail "an unknown value was accepted"
grep -q shieldingg <<<"$out" || fail "an unknown value's error does not name it: $out"
out=$("$helm" template spinel "$chart" --set cni.settings.stateDri=/run/x 2>&1) && fail "an unknown CNI setting was accepted"
grep -q stateDri <<<"$out" || fail "an unknown CNI setting's error does not name it: $out"
# pods/binding only with scheduler.bind (and then --bind and bindVerb too).
! grep -q 'pods/binding' "$work/default.rendered.yaml" || fail "the default values grant pods/binding"
grep -q 'pods/binding' "$work/other.rendered.yaml" && grep -q -- '- --bind' "$work/other.rendered.yaml" \
  && grep -q 'bindVerb: bind' "$work/other.rendered.yaml" || fail "scheduler.bind does not grant and use pods/binding"
ok "helm lint and template: default values and two other sets; bad values refused by name"

# --- deploy/ is the default rendering; every manifest names the one image and tag ---------
scripts/render-deploy.sh --check >/dev/null || { scripts/render-deploy.sh --check; fail "deploy/ is stale"; }
version=$(sed -n '/^\[workspace.package\]/,/^\[/{s/^version = "\(.*\)"/\1/p}' Cargo.toml)
[ "$(scripts/build-image.sh --print-ref)" = "ghcr.io/spinel-dev/spinel:$version" ] || fail "build-image.sh's reference"
grep -q "^version: $version\$" "$chart/Chart.yaml" && grep -q "^appVersion: \"$version\"\$" "$chart/Chart.yaml" \
  || fail "Chart.yaml's version and appVersion are not the workspace version $version"
images=$(grep -rhoE '^\s*image: \S+' deploy/agent deploy/controller deploy/scheduler "$work/default.rendered.yaml" | awk '{print $2}' | sort -u)
[ "$images" = "ghcr.io/spinel-dev/spinel:$version" ] || fail "manifests name other images: $images"
ok "deploy/ is the chart's rendering; every manifest names ghcr.io/spinel-dev/spinel:$version"

# --- kubernetes-validate for the served kinds ---------------------------------------------
venv=target/kubernetes-validate
if [ -x "$venv/bin/kubernetes-validate" ]; then
  for set in default other monitoring; do
    # The DRA driver's objects (resource.k8s.io/v1, in "other") need 1.34 or newer.
    version=1.33.0; [ $set = other ] && version=1.34.0
    out=$("$venv/bin/kubernetes-validate" --strict --quiet -k "$version" "$work/$set.rendered.yaml" 2>&1) || fail "kubernetes-validate ($set): $out"
    unknown=$(grep -v "kind \(PrometheusRule\|PodMonitor\|CustomResourceDefinition\)" <<<"$out" | grep . || true)
    [ -z "$unknown" ] || fail "kubernetes-validate ($set): $unknown"
  done
  ok "kubernetes-validate --strict: every served kind of the three renderings"
else
  fail "$venv is missing (scripts/test.sh installs kubernetes-validate before this)"
fi

# --- alerting rules and dashboard ----------------------------------------------------------
promtool check rules deploy/monitoring/spinel-alerts.rules.yaml >/dev/null || fail "promtool check rules"
promtool test rules tests/monitoring/spinel-alerts.test.yaml >/dev/null \
  || { promtool test rules tests/monitoring/spinel-alerts.test.yaml; fail "promtool test rules"; }
# The PrometheusRule and the plain file hold the same rules.
python3 - "$work/monitoring.rendered.yaml" deploy/monitoring/spinel-alerts.rules.yaml <<'EOF' || fail "the PrometheusRule and the rules file differ"
import sys
text = open(sys.argv[1]).read()
spec = text[text.index("kind: PrometheusRule"):]
spec = spec[spec.index("\nspec:\n") + 7:].split("\n---")[0]
plain = "".join(l for l in open(sys.argv[2]) if not l.startswith("#"))
strip = lambda s: [l[2:] if l.startswith("  ") else l for l in s.splitlines() if l.strip()]
sys.exit(0 if strip(spec) == [l for l in plain.splitlines() if l.strip()] else 1)
EOF
"$bin/dashlint" deploy/monitoring/spinel-dashboard.json > "$work/exprs.txt" || fail "dashlint"
python3 - "$work/exprs.txt" > "$work/dashboard-rules.yaml" <<'EOF'
import json, sys
print("groups:\n- name: dashboard\n  rules:")
for i, e in enumerate(open(sys.argv[1]).read().splitlines()):
    print(f"  - record: dashboard:query{i}\n    expr: {json.dumps(e)}")
EOF
promtool check rules "$work/dashboard-rules.yaml" >/dev/null || fail "a dashboard query is not valid PromQL"
# Every metric the rules and the dashboard read is one Spinel exports (or rdma_* from sysfs).
names=$(cat deploy/monitoring/spinel-alerts.rules.yaml "$work/exprs.txt" | grep -oE '\b(spinel|rdma)_[a-z0-9_]+' | sort -u)
for n in $names; do
  # The name as registered: without the type's suffix, the registry's prefix, or the unit
  # prometheus-client appends (register_with_unit).
  base=${n%_total}; base=${base%_bucket}; base=${base%_sum}; base=${base%_count}
  case $base in
    rdma_roce_pfc_pause_frames|rdma_roce_pfc_pause_duration|rdma_np_cnp_sent|rdma_rp_cnp_handled|rdma_np_ecn_marked_roce_packets) continue ;;
  esac
  found=false
  for b in "$base" "${base%_seconds}"; do
    grep -rqE "\"${b#spinel_fabric_controller_}\"|\"${b#spinel_scheduler_}\"|\"$b\"" \
      fabric-agent/src/metrics.rs fabric-controller/src/metrics.rs scheduler/src/metrics.rs && found=true
  done
  $found || fail "$n is not a metric Spinel exports"
done
ok "promtool check and test of every alert; the dashboard follows Grafana's schema, its queries parse, every metric exists"

# --- the real API server: install as the README says, examples, upgrade, uninstall --------
mkfifo "$work/stdin"
"$bin/spinel-k8s" --data-dir "$work/k8s" --crd "$bin/peer-crds" --exit-with-stdin \
  < "$work/stdin" > "$work/ready.json" 2> "$work/k8s.log" &
cp_pid=$!
exec 9> "$work/stdin"
for _ in $(seq 600); do [ -s "$work/ready.json" ] && break; sleep 0.2; done
[ -s "$work/ready.json" ] || { tail -5 "$work/k8s.log" >&2; fail "the control plane did not start"; }
export KUBECONFIG="$work/k8s/admin.kubeconfig"
export PATH="$bin:$PATH"
# The README's install section, as written (commands between its test markers).
sed -n '/<!-- install-test:begin -->/,/<!-- install-test:end -->/p' README.md \
  | sed -n '/^```sh$/,/^```$/p' | grep -v '^```' > "$work/readme.sh"
[ -s "$work/readme.sh" ] || fail "README.md has no install-test block"
# The Multus NetworkAttachmentDefinition CRD, as a cluster running Multus has it.
[ -f "$bin/multus-src/deployments/multus-daemonset.yml" ] || fail "$bin/multus-src is missing: run tests/k8s/build-multus.sh"
python3 - "$bin/multus-src/deployments/multus-daemonset.yml" > "$work/nad-crd.yaml" <<'EOF'
import re, sys
docs = re.split(r"^---\s*$", open(sys.argv[1]).read(), flags=re.M)
print("".join(d for d in docs if "kind: CustomResourceDefinition" in d))
EOF
"$kubectl" apply --server-side -f "$work/nad-crd.yaml" >/dev/null
# No kube-controller-manager here: the examples' namespace gets its default ServiceAccount as
# the controller would give it.
"$kubectl" create namespace ml >/dev/null && "$kubectl" -n ml create serviceaccount default >/dev/null
(cd "$root" && bash -euxo pipefail "$work/readme.sh") > "$work/readme.out" 2>&1 \
  || { cat "$work/readme.out" >&2; fail "README.md's install commands failed"; }
grep -q 'STATUS: deployed' "$work/readme.out" && grep -q 'has been upgraded' "$work/readme.out" \
  && grep -q 'release "spinel" uninstalled' "$work/readme.out" || { cat "$work/readme.out" >&2; fail "install, upgrade or uninstall did not happen"; }
! "$kubectl" -n spinel-system get daemonset spinel-agent >/dev/null 2>&1 \
  && ! "$kubectl" get crd nodefabrics.fabric.spinel.dev >/dev/null 2>&1 || fail "uninstall left Spinel's objects"
ok "README.md's install section runs against kube-apiserver $(sed -n 's/.*"server":"\([^"]*\)".*/\1/p' "$work/ready.json")"
# Every object of the other value sets, server-side dry-run (CRD schemas, admission policies).
# A dry-run creates nothing, so the namespace its objects go to must exist already. (Not
# spinel-system: this control plane has no namespace controller to finish its deletion.)
"$kubectl" create namespace roce-system >/dev/null
"$kubectl" create namespace spinel-monitoring >/dev/null
"$kubectl" apply --server-side --dry-run=server -f "$work/other.rendered.yaml" >/dev/null 2>"$work/err" \
  || { cat "$work/err" >&2; fail "the API server refuses the other values' objects"; }
"$kubectl" apply --server-side --dry-run=server -f "$work/monitoring.rendered.yaml" >/dev/null 2>"$work/err" \
  || { cat "$work/err" >&2; fail "the API server refuses the monitoring objects"; }
ok "server-side dry-run of every object of the other two value sets"
echo "$pass passed, 0 failed"
