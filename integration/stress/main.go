// Command stress soaks one host with foreground runs and background jobs
// and checks that nothing grows: the host's and the plugin's descriptors,
// the host's goroutines, and both resident sets, before and after, beyond
// small bounds; and that no process is left once the host closes. It
// prints one line per figure and exits nonzero when a bound is broken.
//
//	go run ./integration/stress -dsh-host bin/dsh-host [-runs 10000] [-jobs 500]
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/pluginapi"
)

func main() {
	bin := flag.String("dsh-host", "bin/dsh-host", "dsh-host binary whose built-in bash-local is soaked")
	runs := flag.Int("runs", 10_000, "foreground runs")
	jobs := flag.Int("jobs", 500, "background jobs")
	parallel := flag.Int("parallel", 8, "runs at a time")
	flag.Parse()
	if err := soak(*bin, *runs, *jobs, *parallel); err != nil {
		fmt.Fprintln(os.Stderr, "stress:", err)
		os.Exit(1)
	}
}

// usage is what one side holds at a moment.
type usage struct {
	fds, goroutines int
	rssKiB          int64
}

func measure(pid int) usage {
	u := usage{rssKiB: rss(pid)}
	entries, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	u.fds = len(entries)
	if pid == os.Getpid() {
		u.goroutines = runtime.NumGoroutine()
	}
	return u
}

func rss(pid int) int64 {
	data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n
		}
	}
	return 0
}

func soak(bin string, runs, jobs, parallel int) error {
	ctx := context.Background()
	r, err := host.StartRuntime(ctx, host.RuntimeOptions{
		Options: host.Options{Executor: host.Executor{Name: "bash-local", Path: bin, Args: host.ServeArgs("bash-local")}},
	})
	if err != nil {
		return err
	}
	_, plugin := r.Generation()
	shell := r.Shell()
	batch := func(n int) error {
		var wg sync.WaitGroup
		errs := make(chan error, parallel)
		work := make(chan int)
		for range parallel {
			wg.Go(func() {
				for i := range work {
					res, err := pluginapi.RunRequest(ctx, shell, pluginapi.ExecRequest{Command: "echo " + strconv.Itoa(i)}, nil)
					if err == nil && res.Stdout.Text != strconv.Itoa(i)+"\n" {
						err = fmt.Errorf("run %d said %q", i, res.Stdout.Text)
					}
					if err != nil {
						select {
						case errs <- err:
						default:
						}
					}
				}
			})
		}
		for i := range n {
			work <- i
		}
		close(work)
		wg.Wait()
		select {
		case err := <-errs:
			return err
		default:
			return nil
		}
	}
	if err := batch(200); err != nil { // warm: pools, caches, the runtime's heap
		return err
	}
	runtime.GC()
	hostBefore, pluginBefore := measure(os.Getpid()), measure(plugin)

	began := time.Now()
	if err := batch(runs); err != nil {
		return err
	}
	fmt.Printf("stress foreground_runs %d in %.1f s\n", runs, time.Since(began).Seconds())
	began = time.Now()
	for i := range jobs {
		job, err := r.Jobs().Start(ctx, "stress", pluginapi.ExecRequest{Command: "echo job " + strconv.Itoa(i)})
		if err != nil {
			return err
		}
		if _, err := r.Jobs().Wait(ctx, "stress", job.ID); err != nil {
			return err
		}
		out, _, err := r.Jobs().Output(ctx, "stress", job.ID)
		if err != nil || out.Delta != "job "+strconv.Itoa(i)+"\n" {
			return fmt.Errorf("job %d: %q %v", i, out.Delta, err)
		}
	}
	fmt.Printf("stress background_jobs %d in %.1f s\n", jobs, time.Since(began).Seconds())
	runtime.GC()
	time.Sleep(200 * time.Millisecond) // goroutines of the last calls wind down
	hostAfter, pluginAfter := measure(os.Getpid()), measure(plugin)
	if _, now := r.Generation(); now != plugin || pluginAfter.rssKiB == 0 {
		return fmt.Errorf("the plugin (%d) was replaced during the soak (now %d): its figures mean nothing", plugin, now)
	}

	failed := false
	check := func(name string, before, after, bound int64, unit string) {
		status := "ok"
		if after-before > bound {
			status, failed = "MISS", true
		}
		fmt.Printf("stress %s %d -> %d %s (growth bound %d) %s\n", name, before, after, unit, bound, status)
	}
	check("host_fds", int64(hostBefore.fds), int64(hostAfter.fds), 8, "fds")
	check("host_goroutines", int64(hostBefore.goroutines), int64(hostAfter.goroutines), 20, "goroutines")
	check("host_rss", hostBefore.rssKiB>>10, hostAfter.rssKiB>>10, 32, "MiB")
	check("plugin_fds", int64(pluginBefore.fds), int64(pluginAfter.fds), 8, "fds")
	check("plugin_rss", pluginBefore.rssKiB>>10, pluginAfter.rssKiB>>10, 32, "MiB")

	if err := r.Close(ctx); err != nil {
		return err
	}
	if left := leftovers(bin); len(left) > 0 {
		fmt.Printf("stress processes_left %v MISS\n", left)
		failed = true
	} else {
		fmt.Println("stress processes_left 0 ok")
	}
	if failed {
		return fmt.Errorf("a bound was broken")
	}
	return nil
}

// leftovers are this process's descendants still alive: children of it or
// processes running bin.
func leftovers(bin string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	me := strconv.Itoa(os.Getpid())
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		stat, _ := os.ReadFile("/proc/" + e.Name() + "/stat")
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		exe, _ := os.Readlink("/proc/" + e.Name() + "/exe")
		if len(f) > 1 && f[0] != "Z" && (f[1] == me || exe == bin) {
			pids = append(pids, pid)
		}
	}
	return pids
}
