package pluginapi

// ExecIDVar is the environment variable an executor tags every command
// with: each process a command starts carries it, and so does every process
// those start, even one that left the command's process group (setsid, a
// double fork). The executor finds such descendants by it; a host finds by
// it what a plugin that died left running. Its value starts with the
// executor's ExecIDPrefixVar, when that is set, and a dash.
const ExecIDVar = "DSH_EXEC_ID"

// ExecIDPrefixVar, in the plugin process's environment, is the prefix a
// host chose for the executor's tags (ExecIDVar). Commands do not see it.
const ExecIDPrefixVar = "DSH_EXEC_ID_PREFIX"
