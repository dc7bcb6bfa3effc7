{{/* The image every component runs. */}}
{{- define "spinel.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/* The components' namespace. */}}
{{- define "spinel.namespace" -}}
{{ .Values.namespace.name }}
{{- end -}}

{{/* A component's ServiceAccount user name: (dict "ctx" $ "sa" NAME). */}}
{{- define "spinel.saUser" -}}
system:serviceaccount:{{ .ctx.Values.namespace.name }}:{{ .sa }}
{{- end -}}

{{/* Refuse what is stubbed, before anything is rendered. */}}
{{- define "spinel.checks" -}}
{{- if .Values.scheduler.tls.enabled }}
{{- fail "scheduler.tls.enabled: the extender's mutual TLS is not in this version yet (the values are reserved for it)" }}
{{- end }}
{{- if not (hasSuffix "/" .Values.labelPrefix) }}
{{- fail (printf "labelPrefix %q must end with /" .Values.labelPrefix) }}
{{- end }}
{{- end -}}
