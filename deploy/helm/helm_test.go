// Package helm holds the tests of the Helm chart in kairos/: they render it
// with the helm binary (helm template) for each values variant in
// kairos/ci/ and check the objects it makes, down to kairos accepting each
// Deployment's arguments and environment (server.ParseConfig).
package helm

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

const (
	chartDir = "kairos"
	release  = "ops"
	fullname = "ops-kairos" // the release's name for its objects
)

// helmBinary finds helm: $KAIROS_HELM, then bin/tools/helm (where `make
// test` builds the pinned version), then PATH. Without it the test skips,
// except in CI (CI=true), where it fails: CI must check the chart.
func helmBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("KAIROS_HELM"); p != "" {
		return p
	}
	if p, err := filepath.Abs("../../bin/tools/helm"); err == nil {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("helm"); err == nil {
		return p
	}
	msg := "helm not found ($KAIROS_HELM, bin/tools/helm, PATH): `make helm` builds the pinned version into bin/tools (make test does it)"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg + " (CI=true: the chart's tests must run)")
	}
	t.Skip(msg)
	return ""
}

// object is one rendered Kubernetes object, decoded into the fields the
// tests read.
type object struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name        string            `yaml:"name"`
		Labels      map[string]string `yaml:"labels"`
		Annotations map[string]string `yaml:"annotations"`
	} `yaml:"metadata"`
	Data map[string]string `yaml:"data"` // a Secret's
	Spec spec              `yaml:"spec"`
}

// spec is the union of the specs the chart renders.
type spec struct {
	Replicas *int `yaml:"replicas"` // Deployment
	// Selector is a Service's labels, or {matchLabels: labels} for the
	// others: read it with selects.
	Selector map[string]any `yaml:"selector"`
	Template struct {
		Metadata struct {
			Labels map[string]string `yaml:"labels"`
		} `yaml:"metadata"`
		Spec podSpec `yaml:"spec"`
	} `yaml:"template"`
	Ports []struct { // Service
		Name       string `yaml:"name"`
		Port       int    `yaml:"port"`
		TargetPort string `yaml:"targetPort"`
	} `yaml:"ports"`
	MaxUnavailable any        `yaml:"maxUnavailable"` // PodDisruptionBudget
	Endpoints      []struct { // ServiceMonitor
		Port          string `yaml:"port"`
		Path          string `yaml:"path"`
		Authorization *struct {
			Type        string    `yaml:"type"`
			Credentials secretRef `yaml:"credentials"`
		} `yaml:"authorization"`
	} `yaml:"endpoints"`
	Rules []struct { // Ingress
		Host string `yaml:"host"`
		HTTP struct {
			Paths []struct {
				Backend struct {
					Service struct {
						Name string `yaml:"name"`
						Port struct {
							Name string `yaml:"name"`
						} `yaml:"port"`
					} `yaml:"service"`
				} `yaml:"backend"`
			} `yaml:"paths"`
		} `yaml:"http"`
	} `yaml:"rules"`
}

type podSpec struct {
	SecurityContext struct {
		RunAsNonRoot *bool `yaml:"runAsNonRoot"`
		RunAsUser    int   `yaml:"runAsUser"`
	} `yaml:"securityContext"`
	AutomountServiceAccountToken *bool       `yaml:"automountServiceAccountToken"`
	Containers                   []container `yaml:"containers"`
}

type container struct {
	Image string   `yaml:"image"`
	Args  []string `yaml:"args"`
	Ports []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	Env []struct {
		Name      string `yaml:"name"`
		Value     string `yaml:"value"`
		ValueFrom *struct {
			SecretKeyRef *secretRef `yaml:"secretKeyRef"`
		} `yaml:"valueFrom"`
	} `yaml:"env"`
	LivenessProbe  probe `yaml:"livenessProbe"`
	ReadinessProbe probe `yaml:"readinessProbe"`
	Resources      struct {
		Requests map[string]string `yaml:"requests"`
		Limits   map[string]string `yaml:"limits"`
	} `yaml:"resources"`
	SecurityContext struct {
		AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
		ReadOnlyRootFilesystem   *bool `yaml:"readOnlyRootFilesystem"`
		Capabilities             struct {
			Drop []string `yaml:"drop"`
		} `yaml:"capabilities"`
	} `yaml:"securityContext"`
}

type secretRef struct {
	Name string `yaml:"name"`
	Key  string `yaml:"key"`
}

type probe struct {
	HTTPGet struct {
		Path string `yaml:"path"`
		Port string `yaml:"port"`
	} `yaml:"httpGet"`
}

// rendered is what helm template made of one set of values.
type rendered []object

// template runs helm template on the chart with the values files (paths
// under kairos/) and --set flags, and returns its error output on failure.
func template(t *testing.T, values []string, set ...string) (rendered, error) {
	t.Helper()
	args := []string{"template", release, chartDir, "--namespace", "kairos"}
	for _, v := range values {
		args = append(args, "--values", filepath.Join(chartDir, v))
	}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(helmBinary(t), args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("helm %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	var out rendered
	dec := yaml.NewDecoder(&stdout)
	for {
		var o object
		err := dec.Decode(&o)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("helm template %v: parse its output: %v", values, err)
		}
		if o.Kind == "" {
			continue // an empty document
		}
		out = append(out, o)
	}
	return out, nil
}

func mustTemplate(t *testing.T, values ...string) rendered {
	t.Helper()
	r, err := template(t, values)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// get returns the object of kind and name, failing the test without one.
func (r rendered) get(t *testing.T, kind, name string) object {
	t.Helper()
	for _, o := range r {
		if o.Kind == kind && o.Metadata.Name == name {
			return o
		}
	}
	t.Fatalf("no %s %s rendered; have %s", kind, name, r.names())
	return object{}
}

func (r rendered) has(kind, name string) bool {
	for _, o := range r {
		if o.Kind == kind && o.Metadata.Name == name {
			return true
		}
	}
	return false
}

func (r rendered) all(kind string) []object {
	var out []object
	for _, o := range r {
		if o.Kind == kind {
			out = append(out, o)
		}
	}
	return out
}

func (r rendered) names() string {
	var s []string
	for _, o := range r {
		s = append(s, o.Kind+"/"+o.Metadata.Name)
	}
	return strings.Join(s, ", ")
}

// secretValue reads key of the Secret name when the chart rendered it.
func (r rendered) secretValue(name, key string) (string, bool) {
	for _, o := range r.all("Secret") {
		if o.Metadata.Name != name {
			continue
		}
		v, ok := o.Data[key]
		if !ok {
			return "", false
		}
		b, err := base64.StdEncoding.DecodeString(v)
		return string(b), err == nil
	}
	return "", false
}

// env is a container's environment: a plain value, or the Secret and key
// it comes from.
type envVar struct {
	value  string
	secret *secretRef
}

func (c container) env() map[string]envVar {
	m := map[string]envVar{}
	for _, e := range c.Env {
		v := envVar{value: e.Value}
		if e.ValueFrom != nil {
			v.secret = e.ValueFrom.SecretKeyRef
		}
		m[e.Name] = v
	}
	return m
}

// selects reports whether o's selector (a Service's, or the matchLabels
// of the others') picks an object with labels.
func (o object) selects(labels map[string]string) bool {
	sel := o.Spec.Selector
	if m, ok := sel["matchLabels"].(map[string]any); ok {
		sel = m
	}
	if len(sel) == 0 {
		return false
	}
	for k, v := range sel {
		if labels[k] != fmt.Sprint(v) {
			return false
		}
	}
	return true
}

func (c container) port(name string) int {
	for _, p := range c.Ports {
		if p.Name == name {
			return p.ContainerPort
		}
	}
	return 0
}
