package helm

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kairos-sh/kairos/internal/server"
)

// variant is what one values file of kairos/ci/ must render.
type variant struct {
	deployments  map[string]deployment // by name
	apiComponent string                // the pods behind the API's Service
	auth, redis  secretRef             // where KAIROS_AUTH_SECRET and KAIROS_REDIS_URL come from
	metrics      bool                  // a metrics port and Service
	metricsToken *secretRef            // where KAIROS_METRICS_TOKEN comes from; nil: none
	monitor      bool                  // a ServiceMonitor
	ingress      bool
	pdb          bool
	env          map[string]string // plain variables every pod has
	noEnv        []string          // variables no pod has
	check        func(t *testing.T, cfg server.Config)
}

type deployment struct {
	component string
	roles     string
	replicas  int
}

// existingSecrets stand in for the values of Secrets the chart does not
// make (auth.existingSecret and the like).
var existingSecrets = map[string]string{
	"KAIROS_REDIS_URL":     "redis://redis:6379",
	"KAIROS_AUTH_SECRET":   strings.Repeat("k", 32),
	"KAIROS_METRICS_TOKEN": "an-existing-token",
}

func chartSecret(key string) secretRef { return secretRef{Name: fullname, Key: key} }

var variants = map[string]variant{
	"combined.yaml": {
		deployments:  map[string]deployment{fullname: {"combined", "api,scanner,worker", 2}},
		apiComponent: "combined",
		auth:         chartSecret("auth-secret"), redis: chartSecret("redis-url"),
		metrics: true, pdb: true,
		env:   map[string]string{"KAIROS_PREFIX": "kairos", "KAIROS_LOG_FORMAT": "json", "KAIROS_GRACE": "25s"},
		noEnv: []string{"KAIROS_REDIS_SENTINEL_MASTER", "KAIROS_REDIS_CLUSTER", "KAIROS_METRICS_TOKEN", "KAIROS_WAIT_REPLICAS"},
		check: func(t *testing.T, cfg server.Config) {
			if cfg.RedisURL != "redis://:s3cret@redis-master:6379/0" {
				t.Errorf("KAIROS_REDIS_URL %q: want the values' redis.url, from the chart's Secret", cfg.RedisURL)
			}
		},
	},
	"split.yaml": {
		deployments: map[string]deployment{
			fullname + "-api":     {"api", "api", 3},
			fullname + "-scanner": {"scanner", "scanner", 2},
			fullname + "-worker":  {"worker", "worker", 4},
		},
		apiComponent: "api",
		auth:         secretRef{"kairos-auth", "token-key"}, redis: secretRef{"kairos-redis", "url"},
		metrics: true, metricsToken: &secretRef{fullname, "metrics-token"}, monitor: true, ingress: true, pdb: true,
		env:   map[string]string{"KAIROS_RETENTION": "72h"},
		noEnv: []string{"KAIROS_REDIS_SENTINEL_MASTER", "KAIROS_REDIS_CLUSTER"},
	},
	"sentinel.yaml": {
		deployments: map[string]deployment{
			fullname + "-api":     {"api", "api", 2},
			fullname + "-scanner": {"scanner", "scanner", 2},
			fullname + "-worker":  {"worker", "worker", 2},
		},
		apiComponent: "api",
		auth:         chartSecret("auth-secret"), redis: chartSecret("redis-url"),
		metrics: true, pdb: true,
		env:   map[string]string{"KAIROS_REDIS_SENTINEL_MASTER": "mymaster", "KAIROS_WAIT_REPLICAS": "1"},
		noEnv: []string{"KAIROS_REDIS_CLUSTER"},
		check: func(t *testing.T, cfg server.Config) {
			if cfg.RedisSentinelMaster != "mymaster" || cfg.WaitReplicas != 1 || cfg.RedisCluster {
				t.Errorf("sentinel master %q, wait replicas %d, cluster %v: want mymaster, 1, false", cfg.RedisSentinelMaster, cfg.WaitReplicas, cfg.RedisCluster)
			}
		},
	},
	"cluster.yaml": {
		deployments:  map[string]deployment{fullname: {"combined", "api,scanner,worker", 2}},
		apiComponent: "combined",
		auth:         chartSecret("auth-secret"), redis: chartSecret("redis-url"),
		env:   map[string]string{"KAIROS_REDIS_CLUSTER": "1", "KAIROS_PREFIX": "kairos-prod"},
		noEnv: []string{"KAIROS_REDIS_SENTINEL_MASTER", "KAIROS_METRICS_ADDR", "KAIROS_METRICS_TOKEN"},
		check: func(t *testing.T, cfg server.Config) {
			if !cfg.RedisCluster || cfg.Prefix != "kairos-prod" {
				t.Errorf("cluster %v, prefix %q: want true, kairos-prod", cfg.RedisCluster, cfg.Prefix)
			}
		},
	},
}

// TestChartVariantsAllChecked: every values file in kairos/ci/ has its
// expectations here, so a new variant cannot go unchecked.
func TestChartVariantsAllChecked(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(chartDir, "ci", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var got, want []string
	for _, f := range files {
		got = append(got, filepath.Base(f))
	}
	for name := range variants {
		want = append(want, name)
	}
	slices.Sort(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("values files in %s/ci (-checked here +present):\n%s", chartDir, diff)
	}
}

// TestChartRendersEachVariant renders the chart with each values file of
// kairos/ci/ and checks its Deployments (roles, replicas, arguments,
// environment and where each secret comes from, probes, ports, security
// context, resources) and that kairos accepts each one's configuration,
// then the Services, Secret, ServiceMonitor, Ingress and
// PodDisruptionBudgets around them.
func TestChartRendersEachVariant(t *testing.T) {
	for file, want := range variants {
		t.Run(strings.TrimSuffix(file, ".yaml"), func(t *testing.T) {
			r := mustTemplate(t, filepath.Join("ci", file))
			deploys := r.all("Deployment")
			var names []string
			for _, d := range deploys {
				names = append(names, d.Metadata.Name)
			}
			var wantNames []string
			for name := range want.deployments {
				wantNames = append(wantNames, name)
			}
			slices.Sort(names)
			slices.Sort(wantNames)
			if diff := cmp.Diff(wantNames, names); diff != "" {
				t.Fatalf("Deployments (-want +got):\n%s", diff)
			}
			for _, d := range deploys {
				t.Run(d.Metadata.Name, func(t *testing.T) {
					checkDeployment(t, r, d, want.deployments[d.Metadata.Name], want)
				})
			}
			checkServices(t, r, want)
			checkSecret(t, r, want)
		})
	}
}

func checkDeployment(t *testing.T, r rendered, d object, dw deployment, want variant) {
	if d.Spec.Replicas == nil || *d.Spec.Replicas != dw.replicas {
		t.Errorf("replicas %v, want %d", d.Spec.Replicas, dw.replicas)
	}
	labels := d.Spec.Template.Metadata.Labels
	if labels["app.kubernetes.io/component"] != dw.component || !d.selects(labels) {
		t.Errorf("pod labels %v: want component %s, picked by the Deployment's selector %v", labels, dw.component, d.Spec.Selector)
	}
	pod := d.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	if diff := cmp.Diff([]string{"serve", "--roles", dw.roles}, c.Args); diff != "" {
		t.Errorf("args (-want +got):\n%s", diff)
	}
	env := c.env()

	// Ports and probes: the API's port serves /healthz and /readyz in every
	// role; /metrics has a port of its own.
	if c.port("http") != 8080 || env["KAIROS_ADDR"].value != ":8080" {
		t.Errorf("http port %d, KAIROS_ADDR %q: want 8080 and :8080", c.port("http"), env["KAIROS_ADDR"].value)
	}
	if c.LivenessProbe.HTTPGet.Path != "/healthz" || c.LivenessProbe.HTTPGet.Port != "http" {
		t.Errorf("liveness probe %+v: want /healthz on http", c.LivenessProbe.HTTPGet)
	}
	if c.ReadinessProbe.HTTPGet.Path != "/readyz" || c.ReadinessProbe.HTTPGet.Port != "http" {
		t.Errorf("readiness probe %+v: want /readyz on http", c.ReadinessProbe.HTTPGet)
	}
	if want.metrics {
		if c.port("metrics") != 9091 || env["KAIROS_METRICS_ADDR"].value != ":9091" {
			t.Errorf("metrics port %d, KAIROS_METRICS_ADDR %q: want 9091 and :9091", c.port("metrics"), env["KAIROS_METRICS_ADDR"].value)
		}
	} else if c.port("metrics") != 0 {
		t.Errorf("a metrics port with metrics.enabled=false")
	}

	// Secrets come from Secrets; the auth secret only where the API runs.
	checkRef := func(name string, want *secretRef) {
		t.Helper()
		got := env[name].secret
		switch {
		case want == nil && (got != nil || env[name].value != ""):
			t.Errorf("%s is set; want it unset", name)
		case want != nil && (got == nil || *got != *want):
			t.Errorf("%s from %+v, want from Secret %+v", name, got, *want)
		}
	}
	checkRef("KAIROS_REDIS_URL", &want.redis)
	if strings.Contains(dw.roles, "api") {
		checkRef("KAIROS_AUTH_SECRET", &want.auth)
	} else {
		checkRef("KAIROS_AUTH_SECRET", nil)
	}
	checkRef("KAIROS_METRICS_TOKEN", want.metricsToken)
	for k, v := range want.env {
		if env[k].value != v {
			t.Errorf("%s=%q, want %q", k, env[k].value, v)
		}
	}
	for _, k := range want.noEnv {
		if _, ok := env[k]; ok {
			t.Errorf("%s is set; want it unset", k)
		}
	}

	// Non-root (the image's nonroot user, 65532), read-only, no privileges.
	sc := c.SecurityContext
	if pod.SecurityContext.RunAsNonRoot == nil || !*pod.SecurityContext.RunAsNonRoot || pod.SecurityContext.RunAsUser != 65532 {
		t.Errorf("pod security context %+v: want runAsNonRoot, user 65532", pod.SecurityContext)
	}
	if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		!slices.Equal(sc.Capabilities.Drop, []string{"ALL"}) {
		t.Errorf("container security context %+v: want a read-only root, no privilege escalation, every capability dropped", sc)
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Error("the service account token is mounted; kairos needs no Kubernetes API")
	}
	if c.Resources.Requests["cpu"] == "" || c.Resources.Requests["memory"] == "" || c.Resources.Limits["memory"] == "" {
		t.Errorf("resources %+v: want cpu and memory requests and a memory limit", c.Resources)
	}

	// kairos accepts the configuration: the arguments after "serve" and the
	// environment, with each Secret's value read from the chart's Secret
	// or a stand-in for an existing one. Every KAIROS_* variable set is
	// one kairos reads.
	asked := map[string]bool{}
	getenv := func(name string) string {
		asked[name] = true
		e, ok := env[name]
		if !ok || e.secret == nil {
			return e.value
		}
		if v, ok := r.secretValue(e.secret.Name, e.secret.Key); ok {
			return v
		}
		return existingSecrets[name]
	}
	cfg, err := server.ParseConfig(c.Args[1:], getenv, io.Discard)
	if err != nil {
		t.Fatalf("kairos refuses the rendered configuration: %v", err)
	}
	for name := range env {
		if strings.HasPrefix(name, "KAIROS_") && !asked[name] {
			t.Errorf("%s is set but kairos serve never reads it", name)
		}
	}
	if got := server.RoleList(cfg); got != dw.roles {
		t.Errorf("kairos runs roles %s, want %s", got, dw.roles)
	}
	if want.check != nil {
		want.check(t, cfg)
	}
}

func checkServices(t *testing.T, r rendered, want variant) {
	t.Helper()
	var pods []map[string]string // every Deployment's pod labels
	var apiPods map[string]string
	for _, d := range r.all("Deployment") {
		l := d.Spec.Template.Metadata.Labels
		pods = append(pods, l)
		if l["app.kubernetes.io/component"] == want.apiComponent {
			apiPods = l
		}
	}
	// The API's Service: the api pods only, on their http port.
	api := r.get(t, "Service", fullname)
	for _, l := range pods {
		if got, want := api.selects(l), l["app.kubernetes.io/component"] == want.apiComponent; got != want {
			t.Errorf("Service %s selects pods %v: %v, want %v", fullname, l, got, want)
		}
	}
	if len(api.Spec.Ports) != 1 || api.Spec.Ports[0].TargetPort != "http" {
		t.Errorf("Service %s ports %+v: want one, to http", fullname, api.Spec.Ports)
	}
	if apiPods == nil {
		t.Errorf("no Deployment of component %s", want.apiComponent)
	}

	// Metrics: a Service over every pod, on the metrics port.
	if r.has("Service", fullname+"-metrics") != want.metrics {
		t.Fatalf("metrics Service rendered: %v, want %v", !want.metrics, want.metrics)
	}
	if want.metrics {
		m := r.get(t, "Service", fullname+"-metrics")
		for _, l := range pods {
			if !m.selects(l) {
				t.Errorf("the metrics Service does not select pods %v", l)
			}
		}
		if len(m.Spec.Ports) != 1 || m.Spec.Ports[0].TargetPort != "metrics" || m.Spec.Ports[0].Port != 9091 {
			t.Errorf("metrics Service ports %+v: want 9091 to metrics", m.Spec.Ports)
		}
		if r.has("ServiceMonitor", fullname) != want.monitor {
			t.Errorf("ServiceMonitor rendered: %v, want %v", !want.monitor, want.monitor)
		}
		if want.monitor {
			sm := r.get(t, "ServiceMonitor", fullname)
			if !sm.selects(m.Metadata.Labels) {
				t.Errorf("the ServiceMonitor's selector %v does not pick the metrics Service (labels %v)", sm.Spec.Selector, m.Metadata.Labels)
			}
			if len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Port != "metrics" || sm.Spec.Endpoints[0].Path != "/metrics" {
				t.Fatalf("ServiceMonitor endpoints %+v: want /metrics on the port named metrics", sm.Spec.Endpoints)
			}
			auth := sm.Spec.Endpoints[0].Authorization
			switch {
			case want.metricsToken == nil && auth != nil:
				t.Errorf("the ServiceMonitor sends a token; none is set")
			case want.metricsToken != nil && (auth == nil || auth.Type != "Bearer" || auth.Credentials != *want.metricsToken):
				t.Errorf("ServiceMonitor authorization %+v: want Bearer from %+v", auth, *want.metricsToken)
			}
		}
	}

	if r.has("Ingress", fullname) != want.ingress {
		t.Errorf("Ingress rendered: %v, want %v", !want.ingress, want.ingress)
	}
	if want.ingress {
		for _, rule := range r.get(t, "Ingress", fullname).Spec.Rules {
			for _, p := range rule.HTTP.Paths {
				if p.Backend.Service.Name != fullname || p.Backend.Service.Port.Name != "http" {
					t.Errorf("Ingress %s routes to %+v, want the API's Service", rule.Host, p.Backend.Service)
				}
			}
		}
	}

	pdbs := r.all("PodDisruptionBudget")
	if !want.pdb {
		if len(pdbs) > 0 {
			t.Errorf("%d PodDisruptionBudgets with podDisruptionBudget.enabled=false", len(pdbs))
		}
		return
	}
	for _, l := range pods {
		n := 0
		for _, p := range pdbs {
			if p.selects(l) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("pods %v are covered by %d PodDisruptionBudgets, want 1", l, n)
		}
	}
	for _, p := range pdbs {
		if p.Spec.MaxUnavailable != 1 {
			t.Errorf("PodDisruptionBudget %s: maxUnavailable %v, want 1", p.Metadata.Name, p.Spec.MaxUnavailable)
		}
	}
}

// checkSecret: the chart's Secret holds what the values give inline (an
// auth secret generated when none is given), and nothing it need not.
func checkSecret(t *testing.T, r rendered, want variant) {
	t.Helper()
	for _, ref := range []*secretRef{&want.auth, &want.redis, want.metricsToken} {
		if ref == nil || ref.Name != fullname {
			continue
		}
		v, ok := r.secretValue(ref.Name, ref.Key)
		if !ok || v == "" {
			t.Errorf("Secret %s has no key %s", ref.Name, ref.Key)
		}
		if ref.Key == "auth-secret" && len(v) < 16 {
			t.Errorf("auth secret of %d characters; kairos wants at least 16", len(v))
		}
	}
	if want.auth.Name != fullname {
		if _, ok := r.secretValue(fullname, "auth-secret"); ok {
			t.Errorf("the chart's Secret holds an auth-secret although auth.existingSecret is set")
		}
	}
}

// TestChartRefusesBadValues: values that kairos would refuse at start, or
// that cannot work, fail the install with a message naming the value.
func TestChartRefusesBadValues(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  []string
		want string
	}{
		{"no redis", nil, "redis.url (or redis.existingSecret) is required"},
		{"sentinel and cluster", []string{"redis.url=redis://s1:26379", "redis.sentinelMaster=mymaster", "redis.cluster=true"}, "both set"},
		{"unknown roles mode", []string{"redis.url=redis://r:6379", "roles.mode=mixed"}, `roles.mode "mixed"`},
		{"short auth secret", []string{"redis.url=redis://r:6379", "auth.secret=short"}, "auth.secret is too short"},
		{"chart setting in config", []string{"redis.url=redis://r:6379", "config.KAIROS_REDIS_URL=redis://other:6379"}, "config.KAIROS_REDIS_URL"},
		{"metrics on the API's port", []string{"redis.url=redis://r:6379", "metrics.port=8080"}, "metrics.port is the API's containerPort"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := template(t, nil, tc.set...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("helm template --set %v: %v; want an error saying %q", tc.set, err, tc.want)
			}
		})
	}
}

// TestChartRunsTheImageUser: the chart's runAsUser, 65532, is the user the
// Dockerfile's distroless nonroot image runs as.
func TestChartRunsTheImageUser(t *testing.T) {
	b, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	df := string(b)
	if !strings.Contains(df, "distroless/static-debian12:nonroot") || !strings.Contains(df, "USER nonroot:nonroot") {
		t.Error("the Dockerfile no longer runs distroless's nonroot user (65532): update podSecurityContext in deploy/helm/kairos/values.yaml")
	}
	if !strings.Contains(df, `ENTRYPOINT ["/usr/local/bin/kairos"]`) {
		t.Error(`the Dockerfile's entrypoint is no longer kairos: the chart's args ("serve", "--roles", ...) assume it`)
	}
}
