{{/* The chart's name, or nameOverride. */}}
{{- define "kairos.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The release's name for its objects: <release>-kairos, or the release alone when it already says kairos. */}}
{{- define "kairos.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "kairos.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "kairos.selectorLabels" -}}
app.kubernetes.io/name: {{ include "kairos.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "kairos.labels" -}}
helm.sh/chart: {{ include "kairos.chart" . }}
{{ include "kairos.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: kairos
{{- end }}

{{- define "kairos.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "kairos.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
kairos.components: the Deployments to run, as YAML: component name ->
{roles, api (whether it serves the API), spec (its roles.* values)}.
combined: one, "combined", running every role; split: api, scanner, worker.
*/}}
{{- define "kairos.components" -}}
{{- if eq .Values.roles.mode "combined" }}
combined:
  roles: api,scanner,worker
  api: true
  spec: {{ toJson .Values.roles.combined }}
{{- else if eq .Values.roles.mode "split" }}
api:
  roles: api
  api: true
  spec: {{ toJson .Values.roles.api }}
scanner:
  roles: scanner
  api: false
  spec: {{ toJson .Values.roles.scanner }}
worker:
  roles: worker
  api: false
  spec: {{ toJson .Values.roles.worker }}
{{- else }}
{{- fail (printf "roles.mode %q: use combined (one Deployment running api,scanner,worker) or split (api, scanner and worker Deployments)" .Values.roles.mode) }}
{{- end }}
{{- end }}

{{/* The component whose pods serve the API: the Service's selector. */}}
{{- define "kairos.apiComponent" -}}
{{- if eq .Values.roles.mode "split" }}api{{ else }}combined{{ end }}
{{- end }}

{{/* A component's Deployment name: the fullname for combined, <fullname>-<component> when split. */}}
{{- define "kairos.componentName" -}}
{{- $root := index . 0 }}{{ $component := index . 1 }}
{{- if eq $component "combined" }}
{{- include "kairos.fullname" $root }}
{{- else }}
{{- printf "%s-%s" (include "kairos.fullname" $root) $component | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{/* The Secret the chart creates for what the values give inline. */}}
{{- define "kairos.secretName" -}}
{{- include "kairos.fullname" . }}
{{- end }}

{{/* Whether the chart creates its Secret: something is given inline, or the auth secret is generated. */}}
{{- define "kairos.createSecret" -}}
{{- if or (not .Values.auth.existingSecret) (and .Values.redis.url (not .Values.redis.existingSecret)) (and .Values.metrics.token (not .Values.metrics.existingSecret)) }}true{{ end }}
{{- end }}

{{- define "kairos.authSecretRef" -}}
name: {{ default (include "kairos.secretName" .) .Values.auth.existingSecret }}
key: {{ if .Values.auth.existingSecret }}{{ .Values.auth.existingSecretKey }}{{ else }}auth-secret{{ end }}
{{- end }}

{{- define "kairos.redisSecretRef" -}}
name: {{ default (include "kairos.secretName" .) .Values.redis.existingSecret }}
key: {{ if .Values.redis.existingSecret }}{{ .Values.redis.existingSecretKey }}{{ else }}redis-url{{ end }}
{{- end }}

{{/* Whether a metrics token is configured, inline or from a Secret. */}}
{{- define "kairos.metricsToken" -}}
{{- if or .Values.metrics.token .Values.metrics.existingSecret }}true{{ end }}
{{- end }}

{{- define "kairos.metricsSecretRef" -}}
name: {{ default (include "kairos.secretName" .) .Values.metrics.existingSecret }}
key: {{ if .Values.metrics.existingSecret }}{{ .Values.metrics.existingSecretKey }}{{ else }}metrics-token{{ end }}
{{- end }}

{{/* Checks of the values that kairos would refuse at start, said at install instead. */}}
{{- define "kairos.validate" -}}
{{- if not (or .Values.redis.url .Values.redis.existingSecret) }}
{{- fail "redis.url (or redis.existingSecret) is required: kairos in Kubernetes runs on your Redis, e.g. --set redis.url=redis://:PASSWORD@redis-master:6379" }}
{{- end }}
{{- if and .Values.redis.sentinelMaster .Values.redis.cluster }}
{{- fail "redis.sentinelMaster and redis.cluster are both set: Sentinel watches one master and its replicas, a cluster fails over by itself; set one of them" }}
{{- end }}
{{- if and .Values.auth.secret (lt (len .Values.auth.secret) 16) }}
{{- fail "auth.secret is too short: use at least 16 characters (openssl rand -base64 32)" }}
{{- end }}
{{- if eq (int .Values.metrics.port) (int .Values.containerPort) }}
{{- fail "metrics.port is the API's containerPort: give /metrics a port of its own" }}
{{- end }}
{{- range $k, $v := .Values.config }}
{{- if has $k (list "KAIROS_ADDR" "KAIROS_REDIS_URL" "KAIROS_REDIS_CLUSTER" "KAIROS_REDIS_SENTINEL_MASTER" "KAIROS_AUTH_SECRET" "KAIROS_METRICS_ADDR" "KAIROS_METRICS_TOKEN" "KAIROS_PREFIX" "KAIROS_WAIT_REPLICAS" "KAIROS_ROLES") }}
{{- fail (printf "config.%s: set it through the chart's own values (redis.*, auth.*, metrics.*, containerPort, roles.mode), not config" $k) }}
{{- end }}
{{- end }}
{{- end }}
