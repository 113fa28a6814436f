{{/*
Every object keeps the name deploy/ (kustomize) gives it: the webhook Service, the Lease, the
certificate Secret and the RBAC resourceNames are spelled with these names, so one chart
release per cluster.
*/}}
{{- define "eviction-autoscaler.name" -}}eviction-autoscaler{{- end -}}

{{/* The release namespace, refused where the product cannot work. */}}
{{- define "eviction-autoscaler.namespace" -}}
{{- if eq .Release.Namespace "kube-system" -}}
{{- fail "eviction-autoscaler cannot be installed in kube-system: the webhook leaves its own namespace out (its pods are never sent to itself), and kube-system is the namespace the basic install protects. Install it in its own namespace: helm install -n eviction-autoscaler --create-namespace" -}}
{{- end -}}
{{- .Release.Namespace -}}
{{- end -}}

{{/* Recommended labels of every object. */}}
{{- define "eviction-autoscaler.labels" -}}
app.kubernetes.io/name: eviction-autoscaler
app.kubernetes.io/part-of: eviction-autoscaler
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* The container image. */}}
{{- define "eviction-autoscaler.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/* Pod and container security contexts (deploy/base/deployment.yaml's: Pod Security restricted). */}}
{{- define "eviction-autoscaler.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
seccompProfile:
  type: RuntimeDefault
{{- end -}}
{{- define "eviction-autoscaler.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
capabilities:
  drop: ["ALL"]
{{- end -}}

{{/* Where the pods may run (the Deployment and the cleanup hook's Job alike). */}}
{{- define "eviction-autoscaler.scheduling" -}}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* A webhook's clientConfig and scope (deploy/base/webhook.yaml); `timeout`: the eviction
webhook's is longer, since it may hold an eviction. */}}
{{- define "eviction-autoscaler.webhook" -}}
clientConfig:
  service:
    namespace: {{ include "eviction-autoscaler.namespace" .root }}
    name: eviction-autoscaler
    path: {{ .path }}
    port: 443
namespaceSelector:
  matchExpressions:
    - key: kubernetes.io/metadata.name
      operator: NotIn
      values: [{{ include "eviction-autoscaler.namespace" .root | quote }}]
admissionReviewVersions: ["v1"]
sideEffects: NoneOnDryRun
failurePolicy: Ignore
matchPolicy: Equivalent
timeoutSeconds: {{ .timeout | default 5 }}
{{- end -}}

{{/* What `run` and `cleanup` read besides the ConfigMap: the certificate mode's names, and
the pod's namespace. */}}
{{- define "eviction-autoscaler.settingsEnv" -}}
{{ if eq .Values.certificates.mode "selfManaged" -}}
- name: EVICTION_AUTOSCALER_CERT_SECRET
  value: eviction-autoscaler-tls
- name: EVICTION_AUTOSCALER_WEBHOOK_CONFIGURATION
  value: eviction-autoscaler
- name: EVICTION_AUTOSCALER_WEBHOOK_SERVICE
  value: eviction-autoscaler
{{ else -}}
# cert-manager writes the mounted Secret; an empty setting serves those files.
- name: EVICTION_AUTOSCALER_CERT_SECRET
  value: ""
{{ end -}}
- name: POD_NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
{{- end -}}
