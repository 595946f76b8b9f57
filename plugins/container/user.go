package container

import (
	"fmt"
	"os"
	"strconv"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// commandUser is the user the container runs as, the agent and its
// commands alike: shell.user when set; else the owner (uid:gid) of the
// workspace, as dev containers map their remote user, so that what
// commands write is the workspace owner's and not root's; else (no
// workspace) the image's. Whoever it is, the agent refuses set-id bits
// (--no-setid): nothing made there can lend this machine's users the
// container's uid or gid.
func commandUser(s Settings, workspace string) (string, error) {
	if s.User != "" || workspace == "" {
		return s.User, nil
	}
	fi, err := os.Stat(workspace)
	if err != nil {
		return "", fmt.Errorf("%w: workspace %s: %v", pluginapi.ErrInvalidSettings, workspace, err)
	}
	uid, gid, ok := ownerOf(fi)
	if !ok {
		return "", nil // no owner to read here: the image's user
	}
	return strconv.FormatUint(uint64(uid), 10) + ":" + strconv.FormatUint(uint64(gid), 10), nil
}

// setIDFact is what the agent's --no-setid enforces, as a result's facts
// say it.
const setIDFact = "no set-uid or set-gid bits: refused to every command (seccomp)"

// userFact names the user commands run as, for a result's facts.
func userFact(s Settings, user string) string {
	switch {
	case s.User != "":
		return "user: " + user + " (shell.user)"
	case user != "":
		return "user: " + user + " (the workspace's owner)"
	}
	return "user: the image's"
}
