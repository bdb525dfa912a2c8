#!/usr/bin/env python3
"""Static checks of deploy/ and docs/openapi.yaml: every YAML/JSON file parses, the files agree
with each other (compose mounts exist, k8s probes hit /healthz and /readyz, every metric the
alerts and the dashboard query is in the coordinator's metric contract, every alert has a
runbook section in docs/OPERATIONS.md, every docs/CONTRACTS.md endpoint is in the OpenAPI document),
and every repository path README.md names exists.

Usage: check_deploy.py REPO_ROOT. Exit 0 on success, 1 with one line per problem, 77 (ctest
SKIP_RETURN_CODE) when PyYAML is missing.
"""
import json
import os
import re
import sys

try:
    import yaml
except ImportError:
    print("SKIP: PyYAML is not installed (apt-get install python3-yaml, or scripts/deps-deploy.sh)")
    sys.exit(77)

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
DEPLOY = os.path.join(ROOT, "deploy")
problems = []
notes = []

# The coordinator's metric contract (docs/OPERATIONS.md lists the same names).
METRICS = {
    "hotkey_reports_total", "hotkey_report_entries_total", "hotkey_reports_rejected_total",
    "hotkey_ingest_latency_seconds", "hotkey_hot_keys", "hotkey_list_version",
    "hotkey_list_changes_total", "hotkey_longpoll_waiters", "hotkey_producers",
    "hotkey_topic_rate", "hotkey_partition_skew", "hotkey_idle_partitions_ratio",
    "hotkey_store_write_latency_seconds", "hotkey_store_healthy",
}
HISTOGRAMS = {"hotkey_ingest_latency_seconds", "hotkey_store_write_latency_seconds"}

# docs/CONTRACTS.md's HTTP API table: (method, path) pairs the OpenAPI document must describe.
def contract_api():
    """Reads the (method, path) pairs out of the first column of CONTRACTS.md's HTTP API table."""
    text = open(os.path.join(ROOT, "docs", "CONTRACTS.md"), encoding="utf-8").read()
    section = text.split("## 7. HTTP API", 1)[1].split("\n## ", 1)[0]
    pairs = []
    for line in section.splitlines():
        if not line.startswith("| `"):
            continue
        first_cell = line.split("|")[1]
        for method, path in re.findall(r"`(GET|POST|DELETE|PUT|PATCH) ([^`?\s]+)", first_cell):
            pairs.append((method.lower(), path))
    return pairs


DESIGN_API = contract_api()
if len(DESIGN_API) < 14:
    raise SystemExit(f"docs/CONTRACTS.md: HTTP API table lists only {len(DESIGN_API)} endpoints")


def problem(where, what):
    problems.append(f"{os.path.relpath(where, ROOT)}: {what}")


def load_all():
    """Parses every YAML and JSON file under deploy/ plus docs/openapi.yaml."""
    docs = {}
    files = [os.path.join(ROOT, "docs", "openapi.yaml")]
    for base, _, names in os.walk(DEPLOY):
        files += [os.path.join(base, n) for n in names]
    for path in sorted(files):
        try:
            with open(path, encoding="utf-8") as f:
                if path.endswith((".yml", ".yaml")):
                    docs[path] = [d for d in yaml.safe_load_all(f) if d is not None]
                    if not docs[path]:
                        problem(path, "empty YAML document")
                elif path.endswith(".json"):
                    docs[path] = [json.load(f)]
        except FileNotFoundError:
            problem(path, "missing")
        except (yaml.YAMLError, json.JSONDecodeError, UnicodeDecodeError) as e:
            problem(path, f"does not parse: {e}")
    return docs


def metric_names(expr):
    names = set()
    for m in re.findall(r"\bhotkey_[a-z_]+", expr):
        for suffix in ("_bucket", "_sum", "_count"):
            if m.endswith(suffix) and m[: -len(suffix)] in HISTOGRAMS:
                m = m[: -len(suffix)]
        names.add(m)
    return names


def check_compose(docs):
    path = os.path.join(DEPLOY, "docker-compose.yml")
    if path not in docs:
        return
    compose = docs[path][0]
    services = compose.get("services", {})
    for want in ("kafka", "coordinator", "demo-producer", "prometheus", "grafana"):
        if want not in services:
            problem(path, f"service '{want}' missing")
    if "apache/kafka" not in str(services.get("kafka", {}).get("image", "")):
        problem(path, "kafka must use the official apache/kafka image")
    if "controller" not in str(services.get("kafka", {}).get("environment", {}).get("KAFKA_PROCESS_ROLES", "")):
        problem(path, "kafka must run in KRaft mode (KAFKA_PROCESS_ROLES with controller)")
    demo = services.get("demo-producer", {}).get("entrypoint", [""])[0]
    examples = os.path.join(ROOT, "examples", "CMakeLists.txt")
    if os.path.isfile(examples) and os.path.basename(demo) not in open(examples).read():
        problem(path, f"demo-producer runs {demo}, which examples/CMakeLists.txt does not build")
    declared_volumes = set((compose.get("volumes") or {}).keys())
    for name, svc in services.items():
        if "image" not in svc and "build" not in svc:
            problem(path, f"service '{name}' has neither image nor build")
        build = svc.get("build")
        if isinstance(build, dict):
            ctx = os.path.normpath(os.path.join(DEPLOY, build.get("context", ".")))
            dockerfile = os.path.join(ctx, build.get("dockerfile", "Dockerfile"))
            if not os.path.isfile(dockerfile):
                problem(path, f"service '{name}': build dockerfile {dockerfile} does not exist")
        deps = svc.get("depends_on", {})
        for dep in deps if isinstance(deps, (list, dict)) else []:
            if dep not in services:
                problem(path, f"service '{name}' depends on unknown service '{dep}'")
        for vol in svc.get("volumes", []):
            src = vol.split(":")[0] if isinstance(vol, str) else vol.get("source", "")
            if src.startswith((".", "/")):
                if not os.path.exists(os.path.normpath(os.path.join(DEPLOY, src))):
                    problem(path, f"service '{name}' mounts {src}, which does not exist")
            elif src not in declared_volumes:
                problem(path, f"service '{name}' uses undeclared volume '{src}'")


def check_k8s(docs):
    kdir = os.path.join(DEPLOY, "k8s")
    objects = []
    for path, ds in docs.items():
        if path.startswith(kdir + os.sep) and not path.endswith("kustomization.yaml"):
            for d in ds:
                for key in ("apiVersion", "kind", "metadata"):
                    if key not in d:
                        problem(path, f"object without {key}")
                objects.append((path, d))
    kust = os.path.join(kdir, "kustomization.yaml")
    if kust in docs:
        for res in docs[kust][0].get("resources", []):
            if not os.path.isfile(os.path.join(kdir, res)):
                problem(kust, f"resource {res} does not exist")
    sets = [(p, d) for p, d in objects if d.get("kind") == "StatefulSet"]
    if len(sets) != 1:
        problem(kdir, f"expected one StatefulSet, found {len(sets)}")
        return
    path, sts = sets[0]
    spec = sts["spec"]
    if spec.get("replicas") != 1:
        problem(path, "the coordinator must run as exactly one replica")
    if not spec.get("volumeClaimTemplates"):
        problem(path, "no volumeClaimTemplates: RocksDB needs a persistent volume")
    pod = spec["template"]["spec"]
    container = pod["containers"][0]
    if container.get("livenessProbe", {}).get("httpGet", {}).get("path") != "/healthz":
        problem(path, "liveness probe must be GET /healthz")
    if container.get("readinessProbe", {}).get("httpGet", {}).get("path") != "/readyz":
        problem(path, "readiness probe must be GET /readyz")
    mounts = {m["name"]: m["mountPath"] for m in container.get("volumeMounts", [])}
    claim = spec["volumeClaimTemplates"][0]["metadata"]["name"]
    if claim not in mounts:
        problem(path, f"claim '{claim}' is not mounted")
    if not pod.get("securityContext", {}).get("runAsNonRoot"):
        problem(path, "pod must set runAsNonRoot")
    secret_refs = set()
    for env in container.get("env", []):
        ref = env.get("valueFrom", {}).get("secretKeyRef")
        if ref:
            secret_refs.add((ref["name"], ref["key"]))
    if not secret_refs:
        problem(path, "tokens must come from a Secret (secretKeyRef)")
    example = os.path.join(kdir, "secret.example.yaml")
    if example in docs:
        sec = docs[example][0]
        have = {(sec["metadata"]["name"], k) for k in sec.get("stringData", {})}
        for ref in secret_refs - have:
            problem(path, f"secretKeyRef {ref} is not in secret.example.yaml")
    names = {(d["kind"], d["metadata"]["name"]) for _, d in objects}
    for src in container.get("envFrom", []):
        cm = src.get("configMapRef", {}).get("name")
        if cm and ("ConfigMap", cm) not in names:
            problem(path, f"envFrom ConfigMap '{cm}' is not defined")
    if ("Service", spec.get("serviceName")) not in names:
        problem(path, f"serviceName '{spec.get('serviceName')}' is not a defined Service")


def check_prometheus(docs):
    rules = os.path.join(DEPLOY, "prometheus", "alerts.yml")
    ops_path = os.path.join(ROOT, "docs", "OPERATIONS.md")
    ops = open(ops_path, encoding="utf-8").read() if os.path.isfile(ops_path) else ""
    if not ops:
        problem(ops_path, "missing")
    anchors = {re.sub(r"[^a-z0-9 -]", "", h.strip().lower()).replace(" ", "-")
               for h in re.findall(r"^#+\s+(.*)$", ops, re.M)}
    if rules not in docs:
        return
    alerts = []
    for group in docs[rules][0].get("groups", []):
        for rule in group.get("rules", []):
            if "alert" not in rule:
                continue
            alerts.append(rule["alert"])
            for m in metric_names(rule["expr"]) - METRICS:
                problem(rules, f"{rule['alert']} queries {m}, which is not in the metric contract")
            runbook = rule.get("annotations", {}).get("runbook", "")
            anchor = runbook.partition("#")[2]
            if not runbook.startswith("docs/OPERATIONS.md#") or anchor not in anchors:
                problem(rules, f"{rule['alert']}: runbook '{runbook}' has no section in docs/OPERATIONS.md")
    required = {"HotkeyPartitionSkewHigh", "HotkeyPartitionsIdle", "HotkeyCoordinatorDown",
                "HotkeyProducersNotReporting", "HotkeyListVersionStuck"}
    for a in sorted(required - set(alerts)):
        problem(rules, f"required alert {a} missing")


def check_dashboard(docs):
    path = os.path.join(DEPLOY, "grafana", "hotkey-dashboard.json")
    if path not in docs:
        return
    dash = docs[path][0]
    ids = [p["id"] for p in dash.get("panels", [])]
    if len(ids) != len(set(ids)):
        problem(path, "duplicate panel ids")
    used = set()
    for p in dash.get("panels", []):
        if p.get("type") == "row":
            continue
        if p.get("datasource", {}).get("uid") != "${datasource}":
            problem(path, f"panel '{p.get('title')}' does not use the $datasource variable")
        if not p.get("targets"):
            problem(path, f"panel '{p.get('title')}' has no query")
        for t in p.get("targets", []):
            names = metric_names(t.get("expr", ""))
            used |= names
            for m in names - METRICS:
                problem(path, f"panel '{p.get('title')}' queries {m}, not in the metric contract")
    for want in ("hotkey_reports_total", "hotkey_hot_keys", "hotkey_partition_skew",
                 "hotkey_longpoll_waiters", "hotkey_ingest_latency_seconds",
                 "hotkey_store_write_latency_seconds"):
        if want not in used:
            problem(path, f"no panel shows {want}")
    prov = os.path.join(DEPLOY, "grafana", "provisioning", "datasources", "prometheus.yml")
    if prov in docs and not any(d.get("type") == "prometheus" for d in docs[prov][0].get("datasources", [])):
        problem(prov, "no prometheus datasource")


def check_openapi(docs):
    path = os.path.join(ROOT, "docs", "openapi.yaml")
    if path not in docs:
        return
    api = docs[path][0]
    if not str(api.get("openapi", "")).startswith("3."):
        problem(path, "not an OpenAPI 3 document")
    try:
        from openapi_spec_validator import validate as validate_spec
    except ImportError:
        notes.append("openapi-spec-validator not installed: OpenAPI checked structurally only")
    else:
        try:
            validate_spec(api)
        except Exception as e:  # the validator's exception types vary across versions
            problem(path, f"invalid OpenAPI 3 document: {str(e).splitlines()[0]}")
    paths = api.get("paths", {})
    for method, p in DESIGN_API:
        if method not in paths.get(p, {}):
            problem(path, f"{method.upper()} {p} (docs/CONTRACTS.md) is not documented")

    def resolve(ref):
        node = api
        for part in ref.lstrip("#/").split("/"):
            if not isinstance(node, dict) or part not in node:
                return None
            node = node[part]
        return node

    def walk(node, where):
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and resolve(ref) is None:
                problem(path, f"{where}: unresolved $ref {ref}")
            for k, v in node.items():
                walk(v, f"{where}/{k}")
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, f"{where}[{i}]")

    walk(api, "")
    for p, item in paths.items():
        for method, op in item.items():
            if method not in ("get", "post", "put", "delete", "patch"):
                continue
            if not op.get("responses"):
                problem(path, f"{method.upper()} {p}: no responses")
            if not op.get("operationId"):
                problem(path, f"{method.upper()} {p}: no operationId")
    schemas = api.get("components", {}).get("schemas", {})
    for want in ("Report", "HotKeyList", "Error"):
        if want not in schemas:
            problem(path, f"schema {want} missing")
    if "bearerAuth" not in api.get("components", {}).get("securitySchemes", {}) and \
            not any(s.get("scheme") == "bearer" for s in api.get("components", {}).get("securitySchemes", {}).values()):
        problem(path, "no bearer security scheme")


def check_dockerfile():
    path = os.path.join(DEPLOY, "docker", "Dockerfile")
    if not os.path.isfile(path):
        problem(path, "missing")
        return
    text = open(path, encoding="utf-8").read()
    stages = re.split(r"^FROM\s", text, flags=re.M)
    if len(stages) < 3:
        problem(path, "not a multi-stage build")
        return
    runtime = stages[-1]
    m = re.search(r'^ARG RUNTIME_PACKAGES="([^"]*)"', runtime, re.M)
    if not m:
        problem(path, "runtime stage has no ARG RUNTIME_PACKAGES line")
    else:
        for pkg in m.group(1).split():
            if pkg.endswith("-dev") or pkg in ("build-essential", "g++", "gcc", "cmake", "clang"):
                problem(path, f"runtime stage installs build tool or -dev package {pkg}")
    if "bookworm" not in text:
        problem(path, "not based on Debian bookworm")
    user = re.findall(r"^USER\s+(\S+)", runtime, re.M)
    if not user or user[-1].split(":")[0] in ("root", "0"):
        problem(path, "runtime stage must run as a non-root USER")
    if not re.search(r"^HEALTHCHECK .*", runtime, re.M) or "/healthz" not in runtime:
        problem(path, "runtime stage needs a HEALTHCHECK on /healthz")
    if not re.search(r"^VOLUME\s", runtime, re.M):
        problem(path, "runtime stage must declare the data dir as a VOLUME")


def check_readme_paths():
    """Every repository path the README names (in its commands and its relative links) exists:
    the quick start once named a key sample (keys.tsv) the repository did not ship (issue 25)."""
    path = os.path.join(ROOT, "README.md")
    text = open(path, encoding="utf-8").read()
    named = set()
    for block in re.findall(r"```[a-z]*\n(.*?)```", text, re.S):
        named |= set(re.findall(
            r"(?<![\w/.-])((?:scripts|examples|docs|deploy|tools|client|tests)/[\w./-]*\w)", block))
    for link in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
        if not re.match(r"[a-z]+:", link):
            named.add(link)
    for name in sorted(named):
        if not os.path.exists(os.path.join(ROOT, name)):
            problem(path, f"names {name}, which the repository does not have")


def main():
    check_readme_paths()
    docs = load_all()
    check_compose(docs)
    check_k8s(docs)
    check_prometheus(docs)
    check_dashboard(docs)
    check_openapi(docs)
    check_dockerfile()
    parsed = sum(len(v) for v in docs.values())
    for n in notes:
        print(f"NOTE: {n}")
    if problems:
        print("\n".join(problems))
        print(f"FAILED: {len(problems)} problem(s) in deploy/, docs/openapi.yaml and README.md")
        return 1
    print(f"OK: {len(docs)} files ({parsed} documents) parse and agree with each other")
    return 0


if __name__ == "__main__":
    sys.exit(main())
