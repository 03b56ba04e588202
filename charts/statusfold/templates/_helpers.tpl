{{/*
Object names are fixed (statusfold-manager, statusfold-webhook-service, …): the manager looks its
webhook configurations and certificate Secret up by name, and the objects are the same as
config/default's (a test compares them). One release per cluster.
*/}}

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
