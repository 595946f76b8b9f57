package host

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// ErrUnknownJob: no job of that id belongs to the caller (never was, was
// forgotten after retention, or is another owner's).
var ErrUnknownJob = errors.New("host: unknown job")

// ErrJobsClosed: the jobs runtime was closed.
var ErrJobsClosed = errors.New("host: jobs closed")

// ErrHostClosed is the kill reason of the jobs that Close ended.
var ErrHostClosed = errors.New("the host closed")

// JobID names a background job within a host.
type JobID string

// JobState is where a job is in its life. The zero value is unset.
type JobState int

// The job states.
const (
	JobRunning JobState = iota + 1
	JobExited           // it ended by itself: an exit code, or a signal it did not get from us
	JobKilled           // Kill, the owner's cancellation, a reload or teardown ended it
)

func (s JobState) String() string {
	switch s {
	case JobRunning:
		return "running"
	case JobExited:
		return "exited"
	case JobKilled:
		return "killed"
	}
	return "unset"
}

// JobInfo is what a job's owner may know of it.
type JobInfo struct {
	ID      JobID
	Owner   string
	Command string
	// Generation is the executor generation that runs (ran) the job.
	Generation int
	State      JobState
	// Exit holds the exit facts once the job has finished.
	Exit      pluginapi.ProcessExit
	StartedAt time.Time
	EndedAt   time.Time
	// Terminal: the job runs on a terminal (ExecRequest.Terminal); the
	// host keeps its screen (Jobs.Screen).
	Terminal bool
	// Unread says a finished job has output left for the next read: a
	// read gives at most what the executor gives at once (its result cap).
	Unread bool
	// Note, on what Output returns, says what that read could not give:
	// output of a job whose executor died that its spill files do not
	// hold (a file missing, or shorter than the reads had got).
	Note string
}

// Notice tells a job's owner that the job finished.
type Notice struct {
	Job JobInfo
}

// ShellSource gives the executor that a new job starts on, its generation,
// and a function to call once the job is registered (a runtime holds off
// retiring the generation until then).
type ShellSource func() (shell pluginapi.ShellExecutor, generation int, started func())

// SettleHook may amend the exit facts of a job of generation gen before
// they are recorded (a runtime names the cause when the plugin died).
type SettleHook func(gen int, exit pluginapi.ProcessExit) pluginapi.ProcessExit

// maxNotices bounds the notices kept for one owner; the oldest go first.
const maxNotices = 1000

// Jobs is the jobs runtime (ctx.jobs): background processes as jobs with
// an id and an owner, incremental output, kill, completion notices for the
// owner, and a bounded memory of finished jobs. It is safe for concurrent
// use.
type Jobs struct {
	source ShellSource
	retain int
	settle SettleHook
	// spills reads the spill files of a job whose executor died, where
	// they are (a runtime's reads go to the dead one's successor); nil
	// reads them through the executor the job started on.
	spills pluginapi.SpillReader

	mu       sync.Mutex
	closed   bool
	next     int
	jobs     map[JobID]*job
	finished []JobID // oldest first, for retention
	notices  map[string][]Notice
	running  sync.WaitGroup
	// subscribers see each notice as it is queued, keyed by their
	// subscription.
	subscribers map[*func(Notice)]struct{}
	// terminalsStarting counts, by owner, the terminal jobs being
	// started: they count against MaxTerminalJobs.
	terminalsStarting map[string]int
	// described is what the executor of generation describedGen said
	// it offers: a generation's executor does not change.
	described    *pluginapi.Description
	describedGen int
}

// describe is shell's Description, asked once per executor generation.
func (j *Jobs) describe(ctx context.Context, shell pluginapi.ShellExecutor, gen int) (pluginapi.Description, error) {
	j.mu.Lock()
	if d := j.described; d != nil && j.describedGen == gen {
		j.mu.Unlock()
		return *d, nil
	}
	j.mu.Unlock()
	d, err := shell.Describe(ctx)
	if err != nil {
		return d, err
	}
	j.mu.Lock()
	j.described, j.describedGen = &d, gen
	j.mu.Unlock()
	return d, nil
}

// job is one job's state; mu guards the mutable parts.
type job struct {
	info JobInfo
	proc pluginapi.ShellProcess
	done chan struct{}
	// reads lets one read of the process's output at a time: an owner's,
	// or the final drain when it finished. Reads take what is new, so an
	// owner's read racing the drain would get nothing, with the job
	// already said to be over, while its output went to the tail.
	reads sync.Mutex
	// tail is the output not yet read when the job finished: it stays
	// readable after the process (and its executor) are gone.
	tail *jobTail
	// killReason, when set, says why the runtime killed the job (a reload).
	killReason string
	// pos is how far the reads got in each stream, and where the spill
	// files are; readMax is what one read gives of each stream (the
	// spec's stdoutMaxBytes and stderrMaxBytes): what the rest is read
	// with when the executor dies before giving it.
	pos     readPosition
	readMax [2]int
	// spills reads the spill files when the executor died (Jobs.spills,
	// or the executor the job started on).
	spills pluginapi.SpillReader
	// term is a terminal job's screen and reader; nil without a terminal.
	term *terminal
}

// jobTail is what a finished job had left unread: the reads that drained
// it from the executor, each within its cap, given one a read, in order;
// then, when the executor died before giving it all, the rest from the
// spill files, a read at a time; then empty reads that still name the
// spill files.
type jobTail struct {
	mu    sync.Mutex
	reads []tailRead
	spill [2]string
	rest  *spillRest // nil when nothing is left to recover
}

// tailRead is one read of a tail, with its note (JobInfo.Note).
type tailRead struct {
	r    pluginapi.OutputRead
	note string
}

// next is the tail's next read, its note, and whether more follow it.
func (t *jobTail) next(ctx context.Context) (r pluginapi.OutputRead, note string, more bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.fill(ctx)
	if len(t.reads) == 0 {
		return pluginapi.OutputRead{StdoutSpillPath: t.spill[0], StderrSpillPath: t.spill[1]}, "", false
	}
	tr := t.reads[0]
	t.reads = t.reads[1:]
	t.fill(ctx)
	return tr.r, tr.note, len(t.reads) > 0
}

// fill queues the next read of the recovered rest, when the reads queued
// are all given and it has more: then whether more reads follow is known.
func (t *jobTail) fill(ctx context.Context) {
	for len(t.reads) == 0 && t.rest != nil && t.rest.more() {
		if r, note := t.rest.read(ctx); r.Delta != "" || note != "" {
			t.reads = append(t.reads, tailRead{r, note})
		}
	}
}

// maxTailReads bounds the reads that drain a finished job: far past what an
// executor's buffer holds at its cap per read.
const maxTailReads = 10_000

// drainTail reads what a finished job's process left unread, read after
// read, until one comes back empty; drained says it got there. When a read
// fails because the executor is gone (its plugin died), the rest is read
// from the spill files, from where the job's reads ended (jb.pos); a read
// that fails otherwise (ctx done) ends the tail with a lossy read.
func drainTail(ctx context.Context, jb *job, spills pluginapi.SpillReader) (t *jobTail, drained bool) {
	t = &jobTail{}
	defer func() { t.spill = jb.pos.spillPaths() }()
	for range maxTailReads {
		r, err := jb.proc.ReadOutput(ctx)
		if err != nil {
			var note string
			if errors.Is(err, pluginapi.ErrPluginUnavailable) {
				if t.rest, note = recoverRest(&jb.pos, jb.readMax, spills); t.rest != nil {
					return t, false
				}
			}
			spill := jb.pos.spillPaths()
			lost := pluginapi.OutputRead{Lossy: true, StdoutSpillPath: spill[0], StderrSpillPath: spill[1]}
			t.reads = append(t.reads, tailRead{lost, note})
			return t, false
		}
		jb.pos.saw(r)
		if r.Delta == "" && !r.Lossy {
			return t, true
		}
		t.reads = append(t.reads, tailRead{r: r})
	}
	return t, false
}

// DefaultJobRetention is how many finished jobs a Jobs remembers.
const DefaultJobRetention = 100

// NewJobs returns a jobs runtime starting jobs on source's executor,
// remembering up to retain finished jobs (DefaultJobRetention when 0).
func NewJobs(source ShellSource, retain int) *Jobs {
	if retain <= 0 {
		retain = DefaultJobRetention
	}
	return &Jobs{source: source, retain: retain, jobs: map[JobID]*job{}, notices: map[string][]Notice{},
		subscribers: map[*func(Notice)]struct{}{}, terminalsStarting: map[string]int{}}
}

// unavailableSettleWait bounds how long a read of a job whose executor is
// unavailable waits for the job to settle (its plugin dead, what it left
// killed) and give its output from its tail.
const unavailableSettleWait = 30 * time.Second

// finalReadTimeout bounds the read of a finished job's last output.
const finalReadTimeout = 10 * time.Second

// Start resolves req and starts it as a job of owner's. It returns at once.
// A request without a partition runs in owner's (pluginapi.ExecRequest's
// Partition): owners do not share processes.
func (j *Jobs) Start(ctx context.Context, owner string, req pluginapi.ExecRequest) (JobInfo, error) {
	return j.start(ctx, owner, req, req.Command)
}

// start is Start, the job listed as command (what its owner asked for,
// without the wrapper the bash tool ran it under).
func (j *Jobs) start(ctx context.Context, owner string, req pluginapi.ExecRequest, command string) (JobInfo, error) {
	if req.Partition == "" {
		req.Partition = owner
	}
	shell, gen, started := j.source()
	defer started()
	if req.Terminal != nil || req.OpenStdin {
		// Before Resolve: a plugin built before terminals drops what it
		// does not know, and would run the command without them.
		d, err := j.describe(ctx, shell, gen)
		if err != nil {
			return JobInfo{}, err
		}
		if err := pluginapi.CheckOffers(d, req); err != nil {
			return JobInfo{}, err
		}
	}
	spec, err := shell.Resolve(ctx, req)
	if err != nil {
		return JobInfo{}, err
	}
	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		return JobInfo{}, ErrJobsClosed
	}
	if spec.Terminal != nil {
		if n := j.liveTerminals(owner) + j.terminalsStarting[owner]; n >= MaxTerminalJobs {
			j.mu.Unlock()
			return JobInfo{}, fmt.Errorf("%w: %d terminal jobs run, the limit of one owner (%d): end one (exit it, or job_kill) before starting another",
				ErrTooManyTerminals, n, MaxTerminalJobs)
		}
		j.terminalsStarting[owner]++
		defer func() {
			j.mu.Lock()
			if j.terminalsStarting[owner]--; j.terminalsStarting[owner] <= 0 {
				delete(j.terminalsStarting, owner)
			}
			j.mu.Unlock()
		}()
	}
	j.next++
	id := JobID("job-" + strconv.Itoa(j.next))
	j.running.Add(1)
	j.mu.Unlock()

	// The process lives as long as the job, not as long as this call.
	proc, err := shell.Start(context.WithoutCancel(ctx), spec)
	if err != nil {
		j.running.Done()
		return JobInfo{}, err
	}
	jb := &job{
		info:    JobInfo{ID: id, Owner: owner, Command: command, Generation: gen, State: JobRunning, StartedAt: time.Now(), Terminal: spec.Terminal != nil},
		proc:    proc,
		done:    make(chan struct{}),
		readMax: [2]int{recoveredReadMax(spec.StdoutMaxBytes), recoveredReadMax(spec.StderrMaxBytes)},
	}
	if jb.spills = j.spills; jb.spills == nil {
		jb.spills, _ = shell.(pluginapi.SpillReader)
	}
	if sn, ok := proc.(pluginapi.SpillNamer); ok {
		// Known now, the spill files hold the output even if the
		// executor dies before anyone reads it.
		out, errOut := sn.SpillPaths()
		jb.pos.spill = [2]string{out, errOut}
	}
	j.mu.Lock()
	if j.closed {
		// Close ran while the process started, and did not see it.
		j.mu.Unlock()
		kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finalReadTimeout)
		_, _ = proc.Kill(kctx)
		cancel()
		j.running.Done()
		return JobInfo{}, ErrJobsClosed
	}
	if spec.Terminal != nil {
		jb.term = newTerminal(*spec.Terminal, int(min(spec.StdoutMaxBytes, 1<<30)))
		j.runTerminal(jb)
	}
	j.jobs[id] = jb
	info := jb.info
	j.mu.Unlock()
	go j.watch(jb)
	return info, nil
}

// watch settles a job when its process finishes: its exit facts, its last
// output, a notice for its owner.
func (j *Jobs) watch(jb *job) {
	defer j.running.Done()
	exit, _ := jb.proc.Wait(context.Background()) // Wait fails only for its ctx
	if j.settle != nil {
		exit = j.settle(jb.info.Generation, exit)
	}
	rctx, cancel := context.WithTimeout(context.Background(), finalReadTimeout)
	var tail *jobTail
	var drained bool
	if t := jb.term; t != nil {
		// The pump reads what is left, into the screen and what the
		// owner reads next; then the screen closes.
		close(t.procDone)
		<-t.done
		t.mu.Lock()
		drained = !t.lossy
		t.mu.Unlock()
		tail = &jobTail{}
	}
	jb.reads.Lock() // until the tail is in place
	if tail == nil {
		tail, drained = drainTail(rctx, jb, jb.spills)
	} else {
		tail.spill = jb.pos.spillPaths()
	}
	if r, ok := jb.proc.(pluginapi.Releaser); ok && drained {
		// All the job will ever say is in tail now: the executor may forget it.
		_ = r.Release(rctx)
	}
	cancel()
	j.mu.Lock()
	if exit.Killed && jb.killReason != "" {
		exit.KillReason = jb.killReason
	}
	jb.info.Exit = exit
	jb.info.EndedAt = time.Now()
	jb.info.State = JobExited
	if exit.Killed {
		jb.info.State = JobKilled
	}
	jb.tail = tail
	jb.reads.Unlock()
	close(jb.done)
	notice := Notice{Job: jb.info}
	n := append(j.notices[jb.info.Owner], notice)
	if len(n) > maxNotices {
		n = n[len(n)-maxNotices:]
	}
	j.notices[jb.info.Owner] = n
	j.finished = append(j.finished, jb.info.ID)
	for len(j.finished) > j.retain {
		delete(j.jobs, j.finished[0])
		j.finished = j.finished[1:]
	}
	subs := make([]func(Notice), 0, len(j.subscribers))
	for fn := range j.subscribers {
		subs = append(subs, *fn)
	}
	j.mu.Unlock()
	for _, fn := range subs {
		fn(notice)
	}
}

// Subscribe calls fn with each completion notice as it is queued (the
// notice stays queued for Notices too), from the goroutine that settled the
// job: fn must not block. The returned function ends the subscription; a
// notice already on its way may still reach fn once, so fn must stay safe
// to call after it.
func (j *Jobs) Subscribe(fn func(Notice)) (unsubscribe func()) {
	key := &fn
	j.mu.Lock()
	j.subscribers[key] = struct{}{}
	j.mu.Unlock()
	return func() {
		j.mu.Lock()
		delete(j.subscribers, key)
		j.mu.Unlock()
	}
}

// lookup finds owner's job id.
func (j *Jobs) lookup(owner string, id JobID) (*job, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	jb, ok := j.jobs[id]
	if !ok || jb.info.Owner != owner {
		return nil, fmt.Errorf("%w: %s", ErrUnknownJob, id)
	}
	return jb, nil
}

// Input writes data to the job's input, its terminal or its open stdin
// (a job started with ExecRequest.Terminal or OpenStdin), and then closes
// it when closeStdin is set (pluginapi.InputWriter). It fails with
// pluginapi.ErrInputClosed once the job has finished, and with
// pluginapi.ErrUnsupported for a job without open input.
func (j *Jobs) Input(ctx context.Context, owner string, id JobID, data []byte, closeStdin bool) error {
	jb, err := j.lookup(owner, id)
	if err != nil {
		return err
	}
	select {
	case <-jb.done:
		return fmt.Errorf("%w: job %s has finished", pluginapi.ErrInputClosed, id)
	default:
	}
	return pluginapi.WriteInput(ctx, jb.proc, data, closeStdin)
}

// Resize sets the size of the job's terminal (pluginapi.Resizer).
func (j *Jobs) Resize(ctx context.Context, owner string, id JobID, rows, cols int) error {
	jb, err := j.lookup(owner, id)
	if err != nil {
		return err
	}
	select {
	case <-jb.done:
		return fmt.Errorf("%w: job %s has finished", pluginapi.ErrInputClosed, id)
	default:
	}
	if err := pluginapi.Resize(ctx, jb.proc, rows, cols); err != nil {
		return err
	}
	if jb.term != nil {
		if s := jb.term.liveScreen(); s != nil {
			s.Resize(cols, rows)
		}
	}
	return nil
}

// Output returns what the job wrote since the owner last read it, and the
// job as it is now. A finished job's last output stays readable, once.
func (j *Jobs) Output(ctx context.Context, owner string, id JobID) (pluginapi.OutputRead, JobInfo, error) {
	jb, err := j.lookup(owner, id)
	if err != nil {
		return pluginapi.OutputRead{}, JobInfo{}, err
	}
	if jb.term != nil {
		// The pump reads a terminal job's output; this takes what it
		// kept, and has it read soon: a caller that polls gets what is
		// new at its next call.
		jb.term.hurry()
		tr := j.terminalRead(jb)
		jb.reads.Lock()
		spill := jb.pos.spillPaths()
		jb.reads.Unlock()
		return pluginapi.OutputRead{Delta: tr.Text, Lossy: tr.Lossy, WaitingForInput: tr.WaitingForInput,
			StdoutSpillPath: spill[0]}, tr.Job, nil
	}
	jb.reads.Lock()
	j.mu.Lock()
	if tail := jb.tail; tail != nil {
		info := jb.info
		j.mu.Unlock()
		jb.reads.Unlock()
		// Outside j.mu: the tail may read the rest from a spill file.
		r, note, more := tail.next(ctx)
		info.Unread, info.Note = more, note
		return r, info, nil
	}
	j.mu.Unlock()
	r, err := jb.proc.ReadOutput(ctx)
	if err == nil {
		jb.pos.saw(r)
	}
	// The job as it was when this read was made: it cannot have settled
	// meanwhile (that takes jb.reads), so a read that found nothing new is
	// never paired with "finished" while the tail holds what came last.
	info := j.info(jb)
	jb.reads.Unlock()
	if errors.Is(err, pluginapi.ErrUnknownProcess) {
		// The job finished meanwhile and its executor forgot it: what it
		// had left to say is in its tail (or is about to be).
		select {
		case <-jb.done:
			return j.Output(ctx, owner, id)
		case <-ctx.Done():
			return pluginapi.OutputRead{}, JobInfo{}, ctx.Err()
		}
	}
	if errors.Is(err, pluginapi.ErrPluginUnavailable) {
		// The executor died: the job settles as soon as what it left is
		// killed, and its tail then has the rest of its output.
		t := time.NewTimer(unavailableSettleWait)
		defer t.Stop()
		select {
		case <-jb.done:
			return j.Output(ctx, owner, id)
		case <-t.C:
		case <-ctx.Done():
			return pluginapi.OutputRead{}, JobInfo{}, ctx.Err()
		}
	}
	if err != nil {
		return pluginapi.OutputRead{}, JobInfo{}, err
	}
	return r, info, nil
}

// Wait blocks until the job has finished or ctx is done, and returns it.
func (j *Jobs) Wait(ctx context.Context, owner string, id JobID) (JobInfo, error) {
	jb, err := j.lookup(owner, id)
	if err != nil {
		return JobInfo{}, err
	}
	select {
	case <-jb.done:
		return j.info(jb), nil
	case <-ctx.Done():
		return JobInfo{}, ctx.Err()
	}
}

// Kill ends the job and waits until it has finished. It reports false when
// the job had already finished.
func (j *Jobs) Kill(ctx context.Context, owner string, id JobID) (bool, error) {
	jb, err := j.lookup(owner, id)
	if err != nil {
		return false, err
	}
	select {
	case <-jb.done:
		return false, nil
	default:
	}
	killed, err := jb.proc.Kill(ctx)
	if err != nil {
		return false, err
	}
	select {
	case <-jb.done:
	case <-ctx.Done():
		return killed, ctx.Err()
	}
	return killed, nil
}

// Running counts the running jobs of every owner.
func (j *Jobs) Running() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	n := 0
	for _, jb := range j.jobs {
		if jb.info.State == JobRunning {
			n++
		}
	}
	return n
}

// liveTerminals counts owner's running terminal jobs; j.mu is held.
func (j *Jobs) liveTerminals(owner string) int {
	n := 0
	for _, jb := range j.jobs {
		if jb.term != nil && jb.info.Owner == owner && jb.info.State == JobRunning {
			n++
		}
	}
	return n
}

// List returns owner's jobs, oldest first.
func (j *Jobs) List(owner string) []JobInfo {
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []JobInfo
	for _, jb := range j.jobs {
		if jb.info.Owner == owner {
			out = append(out, jb.info)
		}
	}
	sortJobs(out)
	return out
}

// Notices returns and forgets the completion notices queued for owner.
func (j *Jobs) Notices(owner string) []Notice {
	j.mu.Lock()
	defer j.mu.Unlock()
	n := j.notices[owner]
	delete(j.notices, owner)
	return n
}

func (j *Jobs) info(jb *job) JobInfo {
	j.mu.Lock()
	defer j.mu.Unlock()
	return jb.info
}

// killGeneration kills the running jobs of executor generation gen, for
// reason, and waits until they have finished and their last output is kept.
func (j *Jobs) killGeneration(ctx context.Context, gen int, reason string) error {
	j.mu.Lock()
	var running []*job
	for _, jb := range j.jobs {
		if jb.info.Generation == gen && jb.info.State == JobRunning {
			jb.killReason = reason
			running = append(running, jb)
		}
	}
	j.mu.Unlock()
	var errs []error
	for _, jb := range running {
		if _, err := jb.proc.Kill(ctx); err != nil {
			errs = append(errs, err)
		}
		select {
		case <-jb.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return errors.Join(errs...)
}

// Close kills every running job and waits until all have finished (and
// their last output is kept), or ctx is done. Safe to call twice.
func (j *Jobs) Close(ctx context.Context) error {
	j.mu.Lock()
	j.closed = true
	var running []*job
	for _, jb := range j.jobs {
		if jb.info.State == JobRunning {
			jb.killReason = ErrHostClosed.Error()
			running = append(running, jb)
		}
	}
	j.mu.Unlock()
	for _, jb := range running {
		_, _ = jb.proc.Kill(ctx)
	}
	done := make(chan struct{})
	go func() { j.running.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("host: closing jobs: %w", ctx.Err())
	}
}

// sortJobs orders jobs by start, then id.
func sortJobs(jobs []JobInfo) {
	slices.SortFunc(jobs, func(a, b JobInfo) int {
		if c := a.StartedAt.Compare(b.StartedAt); c != 0 {
			return c
		}
		return strings.Compare(string(a.ID), string(b.ID))
	})
}
