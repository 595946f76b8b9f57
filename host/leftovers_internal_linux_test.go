package host

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/internal/procstat"
	"github.com/dsh-host/dsh-host/pluginapi"
)

// killTagged kills what a dead plugin's commands left: each tagged
// process, and the whole group a tagged process leads, members without the
// tag too (env -i dropped it).
func TestKillTaggedKillsTheGroupsItsTaggedLeadersLead(t *testing.T) {
	prefix := "killtagged" + strconv.Itoa(os.Getpid())
	cmd := exec.Command("bash", "-c", "env -i sleep 1013 & echo $!; exec sleep 1014")
	cmd.Env = append(os.Environ(), pluginapi.ExecIDVar+"="+prefix+"-1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(waited) }()
	buf := make([]byte, 32)
	n, _ := out.Read(buf)
	member, err := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
	if err != nil {
		t.Fatalf("the member's pid: %q", buf[:n])
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-waited
	})
	// Wait for the leader to be the tagged sleep, and the member untagged.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		env, _ := os.ReadFile("/proc/" + strconv.Itoa(member) + "/environ")
		memberArgv, _ := os.ReadFile("/proc/" + strconv.Itoa(member) + "/cmdline")
		argv, _ := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/cmdline")
		if strings.HasPrefix(string(argv), "sleep\x001014") && strings.HasPrefix(string(memberArgv), "sleep\x001013") &&
			!strings.Contains(string(env), pluginapi.ExecIDVar) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the group did not settle into a tagged leader and an untagged member")
		}
	}
	if got := killTagged(prefix); got != 1 {
		t.Errorf("killTagged found %d tagged processes, want 1 (the leader)", got)
	}
	<-waited
	for deadline := time.Now().Add(3 * time.Second); procstat.Alive(member); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(member, syscall.SIGKILL)
			t.Fatal("the untagged member of a tagged leader's group outlived killTagged")
		}
	}
}

// alive is true of a running process, and false of a zombie and of a pid
// that names nothing: a process killTagged killed counts as gone once it
// is a zombie (its parent reaps it), not before.
func TestAliveTellsTheLivingFromZombies(t *testing.T) {
	if !procstat.Alive(os.Getpid()) {
		t.Error("procstat.Alive(this process) is false")
	}
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	// Unwaited, it stays a zombie once it exits.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(stat), ") Z") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("true (pid %d) is no zombie after 10s: %s", pid, stat)
		}
	}
	if procstat.Alive(pid) {
		t.Errorf("procstat.Alive(a zombie) is true")
	}
	_ = cmd.Wait()
	if procstat.Alive(pid) {
		t.Errorf("procstat.Alive(a reaped pid) is true")
	}
}
