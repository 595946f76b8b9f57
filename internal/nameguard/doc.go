// Package nameguard is the container agent's guard against new
// repositories, as bash-sandbox's run init has one in C
// (plugins/bash-sandbox/confine/runinit_guard_linux.c, whose doc says why):
// the commands it starts hand every call that could make a name to it,
// through a seccomp user-notification listener, and it makes the call for
// them on its own copy of the path, refusing (EPERM) beneath its roots a
// name .git in any case, commondir outside a directory named .git, and
// the last of HEAD, objects and refs in one directory outside one. It
// also holds the filter both load (Program).
package nameguard
