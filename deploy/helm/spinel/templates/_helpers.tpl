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
