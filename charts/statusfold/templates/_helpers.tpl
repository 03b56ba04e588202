{{/*
Every name two releases could share is prefixed with statusfold.fullname: the release name when it
contains "statusfold", else "<release>-statusfold". A release named statusfold gets config/default's
names (statusfold-manager, statusfold-webhook-service, …; a test compares them), and the manager is
then given no name flags; any other release tells the manager its Lease, certificate Secret,
webhook Service and webhook configurations (statusfold.nameArgs). So several releases, one per
WDS, each in its own namespace, share one hosting cluster.
*/}}
{{- define "statusfold.fullname" -}}
{{- if contains "statusfold" .Release.Name -}}
{{ .Release.Name | trunc 40 | trimSuffix "-" }}
{{- else -}}
{{ printf "%s-statusfold" .Release.Name | trunc 40 | trimSuffix "-" }}
{{- end -}}
{{- end -}}

{{/* The manager's flags naming what statusfold.fullname prefixes; none for the default names. */}}
{{- define "statusfold.nameArgs" -}}
{{- $fn := include "statusfold.fullname" . -}}
{{- if ne $fn "statusfold" }}
- --leader-election-id={{ $fn }}-manager.statusfold.dev
- --webhook-service={{ $fn }}-webhook-service
- --webhook-cert-secret={{ $fn }}-webhook-server-cert
- --validating-webhook-configuration={{ $fn }}-validating-webhook-configuration
- --mutating-webhook-configuration={{ $fn }}-mutating-webhook-configuration
{{- end }}
{{- end -}}

{{/* Labels on every object: config/'s app.kubernetes.io/name plus Helm's. */}}
{{- define "statusfold.labels" -}}
app.kubernetes.io/name: statusfold
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end -}}

{{/* Helm's labels only, for objects that config/ leaves unlabelled. */}}
{{- define "statusfold.helmLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end -}}

{{/* The manager pods' selector (the same as config/manager's, so an upgrade from it is possible). */}}
{{- define "statusfold.selectorLabels" -}}
app.kubernetes.io/name: statusfold
control-plane: statusfold-manager
{{- end -}}

{{- define "statusfold.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{- define "statusfold.certManager" -}}
{{- if eq .Values.certificates.mode "cert-manager" }}true{{ end -}}
{{- end -}}
