package container

// PluginLabel is this process's label on the containers it makes.
var PluginLabel = pluginLabel
