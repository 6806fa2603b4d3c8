{{/* Names, labels and the settings every Strata role shares. */}}

{{- define "strata.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* RELEASE-CHART, or the release name alone when it already contains the chart name. */}}
{{- define "strata.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Labels of every object; call with (dict "root" $ "component" "proxy"). */}}
{{- define "strata.labels" -}}
{{ include "strata.selectorLabels" . }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* The labels a component's pods are selected by; call with (dict "root" $ "component" "proxy"). */}}
{{- define "strata.selectorLabels" -}}
app.kubernetes.io/name: {{ include "strata.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "strata.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* What is deployed in the chart, as "true" or "". */}}
{{- define "strata.inChartEtcd" -}}
{{- if not .Values.etcd.external.enabled }}true{{ end -}}
{{- end -}}
{{- define "strata.inChartNats" -}}
{{- if and (eq .Values.wal.backend "nats") (not .Values.wal.nats.external.enabled) }}true{{ end -}}
{{- end -}}
{{- define "strata.inChartMinio" -}}
{{- if not .Values.s3.external.enabled }}true{{ end -}}
{{- end -}}
{{- define "strata.inChartSpark" -}}
{{- if and .Values.spark.enabled (not .Values.spark.external.enabled) }}true{{ end -}}
{{- end -}}

{{/* HOST:PORT of etcd (`common.etcd`). */}}
{{- define "strata.etcdEndpoint" -}}
{{- if .Values.etcd.external.enabled -}}
{{- required "etcd.external.endpoint is required when etcd.external.enabled is set (HOST:PORT)" .Values.etcd.external.endpoint -}}
{{- else -}}
{{- printf "%s-etcd.%s.svc:2379" (include "strata.fullname" .) .Release.Namespace -}}
{{- end -}}
{{- end -}}

{{/* NATS URLs, comma-separated (`streamingnode.wal_nats_servers`). */}}
{{- define "strata.natsServers" -}}
{{- if .Values.wal.nats.external.enabled -}}
{{- required "wal.nats.external.servers is required when wal.nats.external.enabled is set" .Values.wal.nats.external.servers -}}
{{- else -}}
{{- printf "nats://%s-nats.%s.svc:4222" (include "strata.fullname" .) .Release.Namespace -}}
{{- end -}}
{{- end -}}

{{/* The S3 endpoint URL (`AWS_ENDPOINT_URL`), empty for AWS S3 itself. */}}
{{- define "strata.s3Endpoint" -}}
{{- if .Values.s3.external.enabled -}}
{{- .Values.s3.external.endpoint -}}
{{- else -}}
{{- printf "http://%s-minio.%s.svc:9000" (include "strata.fullname" .) .Release.Namespace -}}
{{- end -}}
{{- end -}}

{{/* The object storage URI of the segments (`*.storage`). */}}
{{- define "strata.storageURI" -}}
{{- $bucket := required "s3.bucket is required" .Values.s3.bucket -}}
{{- if .Values.s3.prefix -}}
{{- printf "s3://%s/%s" $bucket (trimAll "/" .Values.s3.prefix) -}}
{{- else -}}
{{- printf "s3://%s" $bucket -}}
{{- end -}}
{{- end -}}

{{/* The Secret holding AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or "" when pods use their own identity. */}}
{{- define "strata.s3SecretName" -}}
{{- if .Values.s3.existingSecret -}}
{{- .Values.s3.existingSecret -}}
{{- else if or (include "strata.inChartMinio" .) .Values.s3.accessKeyId -}}
{{- printf "%s-s3" (include "strata.fullname" .) -}}
{{- end -}}
{{- end -}}

{{/* The Secret holding root's first password (key rootPassword), or "" for Milvus's default. */}}
{{- define "strata.rootPasswordSecret" -}}
{{- if .Values.security.existingSecret -}}
{{- .Values.security.existingSecret -}}
{{- else if .Values.security.rootPassword -}}
{{- printf "%s-security" (include "strata.fullname" .) -}}
{{- end -}}
{{- end -}}

{{/* Where the coordinators find root's first password, and the proxies their certificates. */}}
{{- define "strata.rootPasswordFile" -}}/etc/strata-secrets/root/rootPassword{{- end -}}
{{- define "strata.tlsDir" -}}/etc/strata-secrets/tls{{- end -}}
{{- define "strata.internalTlsDir" -}}/etc/strata-secrets/internal-tls{{- end -}}

{{/* The Spark master URL the jobs are submitted to, or "" without Spark. */}}
{{- define "strata.sparkMasterUrl" -}}
{{- if .Values.spark.external.enabled -}}
{{- required "spark.external.masterUrl is required when spark.external.enabled is set (spark://HOST:PORT)" .Values.spark.external.masterUrl -}}
{{- else if .Values.spark.enabled -}}
{{- $full := include "strata.fullname" . -}}
{{- printf "spark://%s-spark-master-0.%s-spark-master.%s.svc:%d" $full $full .Release.Namespace (int .Values.spark.master.port) -}}
{{- end -}}
{{- end -}}

{{/* S3 environment variables of every container that reads the object storage. */}}
{{- define "strata.s3Env" -}}
{{- $endpoint := include "strata.s3Endpoint" . -}}
{{- if $endpoint }}
- name: AWS_ENDPOINT_URL
  value: {{ $endpoint | quote }}
- name: AWS_EC2_METADATA_DISABLED
  value: "true"
{{- end }}
- name: AWS_REGION
  value: {{ .Values.s3.region | quote }}
{{- $secret := include "strata.s3SecretName" . }}
{{- if $secret }}
- name: AWS_ACCESS_KEY_ID
  valueFrom:
    secretKeyRef:
      name: {{ $secret }}
      key: AWS_ACCESS_KEY_ID
- name: AWS_SECRET_ACCESS_KEY
  valueFrom:
    secretKeyRef:
      name: {{ $secret }}
      key: AWS_SECRET_ACCESS_KEY
{{- end }}
{{- end -}}

{{/*
A Strata role's Deployment; call with (dict "root" $ "role" "querynode").
The role reads the ConfigMap's strata.yaml (STRATA_CONFIG), binds and advertises its pod IP
(STRATA_COMMON_HOST: set in the environment, not the file, because the file wins over the
environment), and answers Kubernetes' native gRPC probes on its port.
*/}}
{{/* The roles' metrics_port in strata.yaml: metrics.port, or "" (none) with metrics.enabled false. */}}
{{- define "strata.metricsPort" -}}
{{- if .Values.metrics.enabled }}{{ .Values.metrics.port | int }}{{ else }}""{{ end }}
{{- end }}

{{- define "strata.roleDeployment" -}}
{{- $root := .root -}}
{{- $role := .role -}}
{{- $values := index $root.Values $role -}}
{{- $full := include "strata.fullname" $root -}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $full }}-{{ $role }}
  labels:
    {{- include "strata.labels" (dict "root" $root "component" $role) | nindent 4 }}
spec:
  replicas: {{ $values.replicas | int }}
  selector:
    matchLabels:
      {{- include "strata.selectorLabels" (dict "root" $root "component" $role) | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "strata.selectorLabels" (dict "root" $root "component" $role) | nindent 8 }}
      annotations:
        # Roll the pods when the configuration changes.
        checksum/config: {{ include (print $root.Template.BasePath "/configmap.yaml") $root | sha256sum }}
        {{- if $root.Values.metrics.enabled }}
        # Where a Prometheus that discovers pods by annotation scrapes.
        prometheus.io/scrape: "true"
        prometheus.io/port: {{ $root.Values.metrics.port | int | quote }}
        prometheus.io/path: /metrics
        {{- end }}
    spec:
      {{- with $root.Values.imagePullSecrets }}
      imagePullSecrets:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      securityContext:
        {{- toYaml $root.Values.podSecurityContext | nindent 8 }}
      terminationGracePeriodSeconds: {{ default 30 $values.terminationGracePeriodSeconds | int }}
      containers:
        - name: {{ $role }}
          image: {{ include "strata.image" $root }}
          imagePullPolicy: {{ $root.Values.image.pullPolicy }}
          args: [{{ $role | quote }}]
          env:
            - name: STRATA_CONFIG
              value: /etc/strata/strata.yaml
            - name: STRATA_COMMON_HOST
              valueFrom:
                fieldRef:
                  fieldPath: status.podIP
            - name: STRATA_LOG_LEVEL
              value: {{ $root.Values.cluster.logLevel | quote }}
            - name: STRATA_LOG_FORMAT
              value: {{ $root.Values.cluster.logFormat | quote }}
            {{- if eq $role "coordinator" }}
            # The coordinator drives the Spark jobs; executors connect back to it on its pod IP.
            - name: SPARK_LOCAL_IP
              valueFrom:
                fieldRef:
                  fieldPath: status.podIP
            {{- end }}
            {{- if ne $role "proxy" }}
            {{- include "strata.s3Env" $root | trim | nindent 12 }}
            {{- end }}
            {{- with $values.extraEnv }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
          ports:
            - name: grpc
              containerPort: {{ $values.port | int }}
              protocol: TCP
            {{- if $root.Values.metrics.enabled }}
            # /metrics, /healthz and /log/level (common/opsserver.py).
            - name: metrics
              containerPort: {{ $root.Values.metrics.port | int }}
              protocol: TCP
            {{- end }}
          {{- /* Kubernetes' gRPC probes speak plaintext: a TLS port is probed with a TCP connect. */}}
          {{- $probe := dict "grpc" (dict "port" ($values.port | int)) }}
          {{- if and (eq $role "proxy") (gt ($root.Values.security.tlsMode | int) 0) }}
          {{- $probe = dict "tcpSocket" (dict "port" ($values.port | int)) }}
          {{- end }}
          {{- if and (ne $role "proxy") $root.Values.security.internalTls.enabled }}
          {{- $probe = dict "tcpSocket" (dict "port" ($values.port | int)) }}
          {{- end }}
          startupProbe:
            {{- toYaml $probe | nindent 12 }}
            periodSeconds: {{ $root.Values.probes.startup.periodSeconds | int }}
            failureThreshold: {{ $root.Values.probes.startup.failureThreshold | int }}
          livenessProbe:
            {{- toYaml $probe | nindent 12 }}
            periodSeconds: {{ $root.Values.probes.liveness.periodSeconds | int }}
            timeoutSeconds: {{ $root.Values.probes.liveness.timeoutSeconds | int }}
            failureThreshold: {{ $root.Values.probes.liveness.failureThreshold | int }}
          readinessProbe:
            {{- toYaml $probe | nindent 12 }}
            periodSeconds: {{ $root.Values.probes.readiness.periodSeconds | int }}
            timeoutSeconds: {{ $root.Values.probes.readiness.timeoutSeconds | int }}
            failureThreshold: {{ $root.Values.probes.readiness.failureThreshold | int }}
          resources:
            {{- toYaml $values.resources | nindent 12 }}
          securityContext:
            {{- toYaml $root.Values.securityContext | nindent 12 }}
          volumeMounts:
            - name: config
              mountPath: /etc/strata
              readOnly: true
            - name: tmp
              mountPath: /tmp
            {{- if and (eq $role "streamingnode") (eq $root.Values.wal.backend "local") }}
            - name: wal
              mountPath: {{ $root.Values.wal.local.path }}
            {{- end }}
            {{- if and (eq $role "coordinator") (include "strata.rootPasswordSecret" $root) }}
            - name: root-password
              mountPath: {{ include "strata.rootPasswordFile" $root | dir }}
              readOnly: true
            {{- end }}
            {{- if and (eq $role "proxy") (gt ($root.Values.security.tlsMode | int) 0) }}
            - name: tls
              mountPath: {{ include "strata.tlsDir" $root }}
              readOnly: true
            {{- end }}
            {{- if $root.Values.security.internalTls.enabled }}
            - name: internal-tls
              mountPath: {{ include "strata.internalTlsDir" $root }}
              readOnly: true
            {{- end }}
      volumes:
        - name: config
          configMap:
            name: {{ $full }}-config
        - name: tmp
          emptyDir: {}
        {{- if and (eq $role "streamingnode") (eq $root.Values.wal.backend "local") }}
        # Every streaming node mounts the same claim: the node a pchannel moves to reads its log.
        - name: wal
          persistentVolumeClaim:
            claimName: {{ default (printf "%s-wal" $full) $root.Values.wal.local.existingClaim }}
        {{- end }}
        {{- with and (eq $role "coordinator") (include "strata.rootPasswordSecret" $root) }}
        - name: root-password
          secret:
            secretName: {{ . }}
            defaultMode: 0440  # read by the pod's fsGroup (podSecurityContext)
            items:
              - key: rootPassword
                path: rootPassword
        {{- end }}
        {{- if and (eq $role "proxy") (gt ($root.Values.security.tlsMode | int) 0) }}
        - name: tls
          secret:
            secretName: {{ required "security.tlsSecret is required with security.tlsMode 1 or 2" $root.Values.security.tlsSecret }}
            defaultMode: 0440  # read by the pod's fsGroup (podSecurityContext)
        {{- end }}
        {{- if $root.Values.security.internalTls.enabled }}
        - name: internal-tls
          secret:
            secretName: {{ required "security.internalTls.secret is required with security.internalTls.enabled" $root.Values.security.internalTls.secret }}
            defaultMode: 0440  # read by the pod's fsGroup (podSecurityContext)
        {{- end }}
      {{- with $values.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $values.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $values.affinity }}
      affinity:
        {{- toYaml . | nindent 8 }}
      {{- end }}
{{- end -}}

{{/* A role's PodDisruptionBudget; call with (dict "root" $ "role" "querynode"). */}}
{{- define "strata.rolePDB" -}}
{{- $values := index .root.Values .role -}}
{{- if $values.pdb.enabled -}}
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ include "strata.fullname" .root }}-{{ .role }}
  labels:
    {{- include "strata.labels" (dict "root" .root "component" .role) | nindent 4 }}
spec:
  maxUnavailable: {{ $values.pdb.maxUnavailable }}
  selector:
    matchLabels:
      {{- include "strata.selectorLabels" (dict "root" .root "component" .role) | nindent 6 }}
{{- end -}}
{{- end -}}
