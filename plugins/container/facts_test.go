package container_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// probeWrites is shell that prints "W DIR" for each directory a command
// can create a file in: every mount point of the container (but /proc's
// and /sys's), and the usual places, each tried for real. Then, for each
// mount, "M DIR OPTIONS".
const probeWrites = `for d in $(awk '{print $5}' /proc/self/mountinfo) / /run /var/run /var/tmp /var /home /root /opt /srv /usr /etc /tmp /dev /dev/shm /dev/mqueue %s; do
	case $d in /proc|/proc/*|/sys|/sys/*) continue;; esac
	[ -d $d ] || continue
	f=$d/.dsh-probe-$$; ( : > $f ) 2>/dev/null && { rm -f $f; echo "W $d"; }
done | sort -u
awk '{print "M", $2, $3, $4}' /proc/mounts`

// Every place a command can write, tried from inside the container in the
// modes with a read-only root, is a writable root of the result's facts,
// and every tmpfs among them has a size, which the facts' limits state.
// On Podman, /run and /var/tmp are not the engine's writable tmpfs of
// half the memory: they are read-only, as on Docker.
func TestTheFactsNameEveryWritablePlace(t *testing.T) {
	for _, name := range []string{"docker", "podman"} {
		t.Run(name, func(t *testing.T) {
			addr := engine(t, name)
			ws, extra := dirs(t)
			x := newExecutor(t, addr, map[string]any{
				"workspace":     ws,
				"sandboxPolicy": map[string]any{"writableRoots": []string{extra}},
			})
			for _, mode := range []pluginapi.SandboxMode{pluginapi.SandboxReadOnly, pluginapi.SandboxWorkspaceWrite} {
				res := run(t, x, mode, fmt.Sprintf(probeWrites, ws+" "+extra))
				f := res.Sandbox
				if code(res) != 0 || f == nil {
					t.Fatalf("%s: the probe: %+v", mode, res)
				}
				mounts, types := map[string]string{}, map[string]string{}
				var wrote []string
				for line := range strings.Lines(res.Stdout.Text) {
					fields := strings.Fields(line)
					switch {
					case len(fields) == 2 && fields[0] == "W":
						wrote = append(wrote, fields[1])
					case len(fields) == 4 && fields[0] == "M":
						types[fields[1]], mounts[fields[1]] = fields[2], fields[3]
					}
				}
				for _, d := range wrote {
					if !slices.ContainsFunc(f.WritableRoots, func(r string) bool { return d == r || strings.HasPrefix(d, r+"/") }) {
						t.Errorf("%s: a command wrote %s, which the facts' writable roots %q do not name", mode, d, f.WritableRoots)
					}
					opts, ok := mounts[d]
					switch {
					case !ok || d == ws || d == filepath.Clean(extra):
					case (types[d] == "tmpfs" || types[d] == "shm") && !strings.Contains(opts, "size="):
						t.Errorf("%s: %s is a writable tmpfs without a size (%s): half the memory", mode, d, opts)
					case types[d] == "mqueue":
						if !slices.ContainsFunc(f.Limits, func(l string) bool { return strings.HasPrefix(l, d+" ") }) {
							t.Errorf("%s: %s is a writable %s (%s) whose bound the facts' limits %q do not state", mode, d, types[d], opts, f.Limits)
						}
					default:
						if want := fmt.Sprintf("%s %d MiB ", d, sizeKiB(opts)/1024); !slices.ContainsFunc(f.Limits, func(l string) bool { return strings.HasPrefix(l, want) }) {
							t.Errorf("%s: %s is a writable tmpfs (%s); the facts' limits %q do not say %q", mode, d, opts, f.Limits, want)
						}
					}
				}
				for _, d := range []string{"/run", "/var/tmp"} {
					if slices.Contains(wrote, d) {
						t.Errorf("%s: a command wrote %s (mounted %s); want it read-only, as the root is", mode, d, mounts[d])
					}
				}
				if wantWS := mode == pluginapi.SandboxWorkspaceWrite; slices.Contains(wrote, ws) != wantWS || slices.Contains(wrote, filepath.Clean(extra)) != wantWS {
					t.Errorf("%s: the probe wrote %q; the workspace and writable roots writable: %v", mode, wrote, wantWS)
				}
			}
		})
	}
}

// Unbounded memory (memoryMiB 0, the default) is said in Describe's
// uncontained; a bound takes it out, and the facts state it.
func TestUnboundedMemoryIsUncontained(t *testing.T) {
	addr := engine(t, "docker")
	x := newExecutor(t, addr, nil)
	d, err := x.Describe(t.Context())
	if err != nil || !slices.ContainsFunc(d.Uncontained, func(s string) bool { return strings.HasPrefix(s, "memory is not bounded") }) {
		t.Errorf("memoryMiB 0: uncontained %q, %v; want it to say memory is not bounded", d.Uncontained, err)
	}
	x = newExecutor(t, addr, map[string]any{"sandboxPolicy": map[string]any{"limits": map[string]any{"memoryMiB": 256}}})
	d, _ = x.Describe(t.Context())
	if slices.ContainsFunc(d.Uncontained, func(s string) bool { return strings.HasPrefix(s, "memory is not bounded") }) {
		t.Errorf("memoryMiB 256: uncontained %q still says memory is not bounded", d.Uncontained)
	}
	res := run(t, x, "", "cat /sys/fs/cgroup/memory.max /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null")
	if !strings.Contains(res.Stdout.Text, "268435456") || res.Sandbox == nil || !slices.Contains(res.Sandbox.Limits, "memory 256 MiB (memory cgroup)") {
		t.Errorf("memoryMiB 256: the container's cgroup says %q, the facts %+v", res.Stdout.Text, res.Sandbox)
	}
}

// sizeKiB is the size= of a tmpfs's mount options, in KiB.
func sizeKiB(opts string) int {
	for o := range strings.SplitSeq(opts, ",") {
		if v, ok := strings.CutPrefix(o, "size="); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(v, "k"))
			return n
		}
	}
	return 0
}
