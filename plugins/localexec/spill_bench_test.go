package localexec

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// BenchmarkRunSpill1GiB pushes 1 GiB through Run, which spills it, and
// through os/exec writing the same stream straight to a file, and reports
// both rates, their ratio and the process's peak RSS (VmHWM).
func BenchmarkRunSpill1GiB(b *testing.B) {
	if testing.Short() {
		b.Skip("pushes 2 GiB to disk per iteration")
	}
	const size = 1 << 30
	cmd := "head -c " + strconv.Itoa(size) + " /dev/zero"
	b.Setenv("TMPDIR", b.TempDir())
	e := newTestExecutor()
	b.Cleanup(func() {
		_ = e.Close(context.Background())
		_ = e.removeSpillDir()
	})
	ctx := context.Background()
	spec, err := e.Resolve(ctx, pluginapi.ExecRequest{Command: cmd})
	if err != nil {
		b.Fatal(err)
	}
	baseline := filepath.Join(b.TempDir(), "osexec.out")
	var ours, theirs time.Duration
	for i := 0; i < b.N; i++ {
		f, err := os.Create(baseline)
		if err != nil {
			b.Fatal(err)
		}
		c := exec.Command("bash", "-c", cmd)
		c.Stdout = f
		began := time.Now()
		if err := c.Run(); err != nil {
			b.Fatal(err)
		}
		theirs += time.Since(began)
		f.Close()
		os.Remove(baseline)

		began = time.Now()
		res, err := e.Run(ctx, spec)
		ours += time.Since(began)
		if err != nil {
			b.Fatal(err)
		}
		fi, err := os.Stat(res.Stdout.SpillPath)
		if err != nil || fi.Size() != size || res.Stdout.SpillTruncated || res.Stdout.TotalBytes != size {
			b.Fatalf("spill %+v, %v", res.Stdout, err)
		}
		os.Remove(res.Stdout.SpillPath)
	}
	mbps := func(d time.Duration) float64 { return float64(b.N) * size / 1e6 / d.Seconds() }
	b.ReportMetric(mbps(ours), "run-MB/s")
	b.ReportMetric(mbps(theirs), "osexec-MB/s")
	b.ReportMetric(theirs.Seconds()/ours.Seconds(), "ratio")
	b.ReportMetric(float64(vmHWM(b))/(1<<20), "VmHWM-MiB")
}

// vmHWM is the process's peak resident set, in bytes.
func vmHWM(b *testing.B) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		b.Skip("no /proc/self/status")
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := bytes.CutPrefix(s.Bytes(), []byte("VmHWM:")); ok {
			kb, _ := strconv.ParseInt(string(bytes.TrimSuffix(bytes.TrimSpace(v), []byte(" kB"))), 10, 64)
			return kb << 10
		}
	}
	return 0
}
