package kubernetes

// PolicySchema is the JSON Schema of the sandbox policy (the settings
// file's sandbox section), the same keys as the container executor's,
// each mapped onto the created pods.
const PolicySchema = `{
    "type": "object",
    "additionalProperties": false,
    "properties": {
      "defaultMode": {"type": "string", "enum": ["read-only", "workspace-write", "danger-full-access"], "default": "workspace-write",
        "description": "the mode of a command that asks for none; each mode a command asks for has a pod of its own, of that mode's shape (read-only and workspace-write: a read-only root file system; read-only: the workspace mounted read-only)"},
      "writableRoots": {"type": "array", "items": {"type": "string"}, "maxItems": 0,
        "description": "directories of this machine, which a pod cannot mount: none may be given (shell.workspace is the pods' writable volume)"},
      "network": {"type": "boolean", "default": false,
        "description": "leave the network to every mode; off: a NetworkPolicy denies all ingress and egress to the pods of read-only and workspace-write, enforced only where the cluster's CNI enforces NetworkPolicy"},
      "protectedPaths": {"type": "array", "items": {"type": "string", "minLength": 1},
        "description": "accepted for the container executor's sake, not enforced in a pod: the workspace is writable throughout in workspace-write (the result's facts say so)"},
      "unprotectedPaths": {"type": "array", "items": {"type": "string", "minLength": 1},
        "description": "accepted for the container executor's sake; no path is protected in a pod"},
      "limits": {"type": "object", "additionalProperties": false,
        "description": "what one pod may take (each mode's pod)",
        "properties": {
          "processes": {"type": "integer", "minimum": 0, "default": 2048, "description": "not applied: a pod's pids limit is the kubelet's (podPidsLimit); the result's facts say so"},
          "tmpMiB": {"type": "integer", "minimum": 0, "default": 1024, "description": "size limit of /tmp, an emptyDir (the kubelet evicts the pod past it; 0: no bound)"},
          "memoryMiB": {"type": "integer", "minimum": 0, "default": 0, "description": "the shell container's memory limit (0, the default: podTemplate.resources', else none)"}
        }}
    }
  }`

// podTemplateSchema is the JSON Schema of PodTemplate: each field as the
// Pod API has it.
const podTemplateSchema = `{
      "type": "object",
      "additionalProperties": false,
      "description": "the part of the created pods' spec given here, as the Pod API has it",
      "properties": {
        "resources": {"type": "object", "additionalProperties": false,
          "description": "the shell container's resources (sandboxPolicy.limits.memoryMiB, when set, is its memory limit)",
          "properties": {
            "limits": {"type": "object", "additionalProperties": {"type": ["string", "number"]}},
            "requests": {"type": "object", "additionalProperties": {"type": ["string", "number"]}}
          }},
        "nodeSelector": {"type": "object", "additionalProperties": {"type": "string"}, "description": "labels of the nodes the pods may run on"},
        "tolerations": {"type": "array", "description": "the pods' tolerations", "items": {"type": "object", "additionalProperties": false,
          "properties": {
            "key": {"type": "string"},
            "operator": {"type": "string", "enum": ["Exists", "Equal"]},
            "value": {"type": "string"},
            "effect": {"type": "string", "enum": ["", "NoSchedule", "PreferNoSchedule", "NoExecute"]},
            "tolerationSeconds": {"type": "integer"}
          }}},
        "serviceAccountName": {"type": "string", "description": "the pods' service account (its token is mounted only with serviceAccountToken)"},
        "runtimeClassName": {"type": "string", "description": "the pods' RuntimeClass (gVisor, Kata)"},
        "imagePullSecrets": {"type": "array", "description": "secrets the kubelet pulls the image with",
          "items": {"type": "object", "additionalProperties": false, "required": ["name"], "properties": {"name": {"type": "string", "minLength": 1}}}}
      }
    }`

// workspaceSchema is the JSON Schema of Workspace.
const workspaceSchema = `{
      "type": "object",
      "additionalProperties": false,
      "required": ["mountPath"],
      "description": "the created pods' workspace: a PersistentVolumeClaim (claimName), else an emptyDir; the commands start in its mountPath; read-only in read-only mode",
      "properties": {
        "mountPath": {"type": "string", "pattern": "^/", "description": "where it is mounted, and the commands' default workdir"},
        "claimName": {"type": "string", "minLength": 1, "description": "a PersistentVolumeClaim of the namespace (default: an emptyDir of the pod's)"},
        "sizeLimitMiB": {"type": "integer", "minimum": 0, "description": "the emptyDir's size limit (not with claimName; 0: none)"}
      }
    }`
