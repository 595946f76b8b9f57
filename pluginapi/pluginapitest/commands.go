package pluginapitest

import (
	"fmt"
	"strconv"
	"strings"
)

// Commands are the shell snippets the suite runs, so that executors of
// other shells can be checked with the same cases.
type Commands struct {
	// Exit exits with code.
	Exit func(code int) string
	// OutErr prints out on stdout and err on stderr, each with a newline.
	OutErr func(out, err string) string
	// PIDThen prints the shell's process id on the first line, then runs
	// rest. The PID may be followed by a space and the PID namespace it is
	// numbered in (as readlink /proc/self/ns/pid gives it): a sandbox's
	// commands run in namespaces of their own.
	PIDThen func(rest string) string
	// Sleep sleeps for secs seconds.
	Sleep func(secs float64) string
	// KillSelf kills the shell with SIGKILL.
	KillSelf string
	// Touch creates the file at path.
	Touch func(path string) string
	// Cat copies stdin to stdout.
	Cat string
	// PrintEnv prints the value of the environment variable name, without a
	// newline.
	PrintEnv func(name string) string
	// LeaveBehind starts a sleep of secs seconds in the background three
	// ways, printing each one's PID on a line of its own, and exits: in the
	// command's process group, in a session of its own (setsid), and through
	// a double fork into a session of its own; then "done", with the PID
	// namespace as PIDThen says.
	LeaveBehind func(secs int) string
	// Escape starts a sleep of secs seconds in a session of its own, prints
	// its PID (and namespace, as PIDThen says), and exits: nothing of the
	// command stays in its process group.
	Escape func(secs int) string
	// Count prints the integers 1 to n, one per line.
	Count func(n int) string
	// Repeat prints s n times, without newlines.
	Repeat func(s string, n int) string
	// IgnoreTerm makes the shell ignore SIGTERM, then runs rest.
	IgnoreTerm func(rest string) string
	// TermWitness prints the shell's PID on the first line (with the PID
	// namespace, as PIDThen says), then runs a process other than the
	// shell, in the command's process group, that prints "ready" on a line
	// once it traps SIGTERM, and word on a line when SIGTERM comes, then
	// exits. The shell waits for it, and goes on waiting when SIGTERM comes
	// to the shell too, so that word is not lost to a group killed because
	// its shell ended first.
	TermWitness func(word string) string
	// Procs, Marked and KillAll are the probes of an Options.Elsewhere run,
	// which look at the processes where the commands run. Each exits 3
	// when it cannot read them there (no /proc).
	//
	// Procs prints the PID namespace on its first line, as "ns NS" (NS as
	// PIDThen prints it), then the PID and process group of each live
	// process, one per line.
	Procs string
	// Marked prints the live processes whose environment holds kv
	// (NAME=VALUE), itself not among them: one per line, each as its PID or
	// as /proc/PID/environ.
	Marked func(kv string) string
	// KillAll SIGKILLs pids, first printing each on a line with its
	// command line.
	KillAll func(pids []int) string
	// ReadLine prints prompt without a newline, reads a line of input,
	// and prints "got " and the line on a line of its own. Interactive
	// cases (terminals, input) need it and the three below; where any is
	// unset they are skipped.
	ReadLine func(prompt string) string
	// IsTerminal prints "tty" on a line when stdin and stdout are a
	// terminal, else "notty".
	IsTerminal string
	// TermSize prints the terminal's rows and columns, separated by a
	// space, on a line (as stty size does).
	TermSize string
	// InteractiveShell replaces the command with an interactive shell,
	// which runs what its input gives, line after line; Ctrl-C on its
	// terminal interrupts the command it runs and it goes on reading.
	InteractiveShell string
	// TextOnly says the shell holds environment values as text, so one
	// that is not UTF-8 cannot reach its output byte for byte
	// (PowerShell's strings are UTF-16).
	TextOnly bool
}

// POSIX are the commands for bash and other POSIX shells.
var POSIX = Commands{
	Exit:       func(code int) string { return "exit " + strconv.Itoa(code) },
	OutErr:     func(out, err string) string { return fmt.Sprintf("echo %s; echo %s >&2", out, err) },
	PIDThen:    func(rest string) string { return "echo $$ " + posixPIDNS + "; " + rest },
	Sleep:      func(secs float64) string { return "sleep " + strconv.FormatFloat(secs, 'f', -1, 64) },
	KillSelf:   "kill -9 $$",
	Touch:      func(path string) string { return "touch " + strconv.Quote(path) },
	Cat:        "cat",
	PrintEnv:   func(name string) string { return `printf %s "$` + name + `"` },
	IgnoreTerm: func(rest string) string { return "trap '' TERM; " + rest },
	Count:      func(n int) string { return "seq 1 " + strconv.Itoa(n) },
	Escape:     func(secs int) string { return "setsid sleep " + strconv.Itoa(secs) + " & echo $! " + posixPIDNS },
	Repeat: func(s string, n int) string {
		return "for i in $(seq " + strconv.Itoa(n) + "); do printf %s " + strconv.Quote(s) + "; done"
	},
	LeaveBehind: func(secs int) string {
		s := strconv.Itoa(secs)
		return "sleep " + s + " & echo $!; setsid sleep " + s + " & echo $!; " +
			"(setsid sleep " + s + " & echo $!) ; echo done " + posixPIDNS
	},
	Procs: "[ -r /proc/self/stat ] || exit 3; echo ns " + posixPIDNS + "; " +
		"for f in /proc/[0-9]*/stat; do read -r s < \"$f\" 2>/dev/null || continue; " +
		"set -- ${s##*) }; case $1 in Z|X) continue;; esac; echo \"${s%% *} $3\"; done",
	// The shell ends as grep, the mark out of its environment: grep reads
	// every environment but its own.
	Marked: func(kv string) string {
		name, _, _ := strings.Cut(kv, "=")
		return "[ -r /proc/self/environ ] || exit 3; unset " + name + "; exec grep -lsxzF -e " + shQuote(kv) + " /proc/[0-9]*/environ"
	},
	KillAll: func(pids []int) string {
		list := ""
		for _, p := range pids {
			list += " " + strconv.Itoa(p)
		}
		return "for p in" + list + "; do c=$(tr '\\0' ' ' 2>/dev/null < /proc/$p/cmdline); printf '%s (%s)\n' $p \"${c% }\"; done; " +
			"kill -9" + list + " 2>/dev/null; true"
	},
	// The shell's trap is a handler, not "ignore": the member, started
	// after it, gets SIGTERM's default and can trap it.
	TermWitness: func(word string) string {
		return "echo $$ " + posixPIDNS + "; trap : TERM; sh -c '" + termMember(word) + "'"
	},
	ReadLine: func(prompt string) string {
		return "printf %s " + shQuote(prompt) + `; IFS= read -r line; echo "got $line"`
	},
	IsTerminal:       "if [ -t 0 ] && [ -t 1 ]; then echo tty; else echo notty; fi",
	TermSize:         "stty size",
	InteractiveShell: "exec sh -i",
}

// posixPIDNS prints the shell's PID namespace, or nothing.
const posixPIDNS = "$(readlink /proc/$$/ns/pid 2>/dev/null)"

// termMember is the script of TermWitness's group member, for sh -c: it
// traps SIGTERM, which its sleeps get too (they share its group). It has
// no quotes, so that any shell can pass it quoted.
func termMember(word string) string {
	return "w() { echo " + word + "; exit 0; }; trap w TERM; echo ready; while :; do sleep 0.1; done"
}

// shQuote quotes s for a POSIX shell: single quotes, each inner one
// closed, escaped and reopened.
func shQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// psQuote quotes s for PowerShell: single quotes, doubled inside.
func psQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// PowerShell are the commands for pwsh (PowerShell 7 on Linux, where the
// suite's signals and sessions exist). They write through [Console] so
// that PowerShell's formatting adds nothing, and leave processes behind
// through sh, as a command would through any native program.
var PowerShell = Commands{
	Exit: func(code int) string { return "exit " + strconv.Itoa(code) },
	OutErr: func(out, err string) string {
		return "[Console]::Out.WriteLine(" + psQuote(out) + "); [Console]::Error.WriteLine(" + psQuote(err) + ")"
	},
	PIDThen: func(rest string) string { return "[Console]::Out.WriteLine($PID); " + rest },
	Sleep: func(secs float64) string {
		return "Start-Sleep -Milliseconds " + strconv.FormatInt(int64(secs*1000), 10)
	},
	KillSelf: "Stop-Process -Id $PID -Force",
	Touch: func(path string) string {
		return "New-Item -ItemType File -Force -Path " + psQuote(path) + " | Out-Null"
	},
	Cat:        "[Console]::Out.Write([Console]::In.ReadToEnd())",
	PrintEnv:   func(name string) string { return "[Console]::Out.Write($env:" + name + ")" },
	IgnoreTerm: psIgnoreTerm,
	Count: func(n int) string {
		return "1.." + strconv.Itoa(n) + " | ForEach-Object { [Console]::Out.WriteLine($_) }"
	},
	Escape: func(secs int) string {
		return "sh -c " + psQuote("setsid sleep "+strconv.Itoa(secs)+" & echo $!")
	},
	Repeat: func(s string, n int) string {
		return "[Console]::Out.Write(" + psQuote(s) + " * " + strconv.Itoa(n) + ")"
	},
	LeaveBehind: func(secs int) string {
		return "sh -c " + psQuote(POSIX.LeaveBehind(secs))
	},
	// PowerShell waits for the native sh in the foreground, its own
	// SIGTERM cancelled as IgnoreTerm does (a handler: sh gets the
	// default).
	TermWitness: func(word string) string {
		return "[Console]::Out.WriteLine($PID); " + psIgnoreTerm("sh -c "+psQuote(termMember(word)))
	},
	TextOnly: true,
}

// psIgnoreTerm makes PowerShell ignore SIGTERM, then runs rest. The
// handler is C#: .NET runs it on a thread with no PowerShell runspace,
// where a script block cannot run.
func psIgnoreTerm(rest string) string {
	return "Add-Type -TypeDefinition 'using System.Runtime.InteropServices; public static class DshIgnoreTerm { " +
		"public static PosixSignalRegistration R; public static void Start() { " +
		"R = PosixSignalRegistration.Create(PosixSignal.SIGTERM, c => c.Cancel = true); } }'; " +
		"[DshIgnoreTerm]::Start(); " + rest
}
