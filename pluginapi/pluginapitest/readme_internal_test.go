package pluginapitest

import (
	"os"
	"strings"
	"testing"
)

// readmeSays is, for each case of the suite, what pluginapi/README.md
// says of it: the list of what an executor must provide names everything
// the suite checks. A new case needs its line in the README, and here.
var readmeSays = map[string]string{
	"background/start returns at once and kill ends the group":                  "`Start` returns at once",
	"background/kill after the process finished reports false":                  "returns false after the\n  process finished",
	"background/reads are deltas that never re-deliver":                         "reads are deltas that never re-deliver",
	"background/a process that names its spill files says where each read ends": "Each read says where in each stream its text ends",
	"background/a finished process can be released, a running one cannot":       "a finished process can be released (`Releaser`), a running\n  one cannot",
	"background/stderr comes in a marked section":                               "stderr in a\n  marked section",
	"background/start ignores the timeout":                                      "ignores the\n  timeout",
	"background/cancelling Start's ctx kills the process":                       "cancelling `Start`'s ctx kills\n  the process",
	"background/close terminates and joins what runs":                           "`Close` terminates and joins what runs",
	"describe/names the shell service and namespace":                            "names the `shell` service and the `shell` settings\n  namespace",
	"resolve/fills defaults":                                                    "**Resolve** fills every default",
	"resolve/caps and the result reports the effective timeout":                 "report the effective\n  timeout",
	"resolve/carries the partition":                                             "carries the request's `Partition` into the spec unchanged",
	"resolve/rejects a negative timeout":                                        "refuses a negative timeout",
	"resolve/rejects a managed key outside DSH_*":                               "a `DshEnv` key outside `DSH_*`",
	"run/exit 0":                                                                                 "settles with a result for exit 0",
	"run/exit 3 settles with a result":                                                           "any other exit code",
	"run/stdout and stderr apart":                                                                "stdout and stderr apart",
	"run/a signal death has a signal and no exit code":                                           "a\n  signal death (a signal and no exit code)",
	"run/no stdin reads as empty at once":                                                        "reads an empty stdin at once",
	"run/stdin is written once and closed":                                                       "it is written once and closed",
	"run/paths and environment values need not be UTF-8":                                         "paths\n  and environment values need not be UTF-8",
	"run/resolve and run in one call":                                                            "`RunRequest` resolves and runs\n  in one call",
	"run/live output matches the collected output":                                               "live output is the collected output",
	"deadline/timeout kills the group and says timedOut":                                         "a timeout kills the group and sets `TimedOut`",
	"deadline/a command ignoring SIGTERM is killed after the grace":                              "ignores SIGTERM is killed after `killGraceMs`",
	"deadline/cancelling ctx aborts with the cause":                                              "cancelling `Run`'s\n  ctx aborts with the cause",
	"deadline/timeout first: timedOut only":                                                      "the\n  first cause wins",
	"deadline/abort first: aborted only":                                                         "the\n  first cause wins",
	"deadline/timeout and abort together: never both":                                            "the result never has both",
	"env/inherited variables reach the command":                                                  "the plugin's own environment,\n  inherited",
	"env/commands carry the executor's tag":                                                      "**A tag on every command**",
	"env/inherited credentials are scrubbed":                                                     "with credentials scrubbed",
	"env/inherited credentials are told by their value too":                                      "values that look like one",
	"env/model-friendly overrides win over the inherited environment":                            "then the model-friendly overrides",
	"env/the caller's env wins over the overrides":                                               "then the request's `Env`",
	"env/the caller may pass a credential explicitly":                                            "then the request's `Env`",
	"env/managed DSH_* entries win over the caller's env":                                        "which nothing displaces",
	"errors/a missing workdir is an error naming it":                                             "A missing workdir, or one that\n  is a file, is `ErrUnusableWorkdir` naming it",
	"errors/a workdir that is a file is an error":                                                "A missing workdir, or one that\n  is a file, is `ErrUnusableWorkdir` naming it",
	"errors/a background process that cannot spawn settles as killed, the error on stderr":       "**A spawn that\n  fails still returns a handle**",
	"errors/a done ctx before Run is an error and runs nothing":                                  "`ErrAbortedBeforeStart`, running nothing",
	"errors/an unresolved spec is refused":                                                       "(`ErrSpecNotResolved`)",
	"errors/a command longer than one argument can carry is refused clearly":                     "**An oversized command is refused**",
	"errors/a request too large for the wire is refused clearly":                                 "(too large for the wire) with `ErrRequestTooLarge`",
	"output/small output is whole and never spills":                                              "is collected whole and never touches\n  disk",
	"output/past the cap: head and tail within it, the full stream spilled":                      "the collected text keeps the head and the tail",
	"output/ReadSpill reads a spill file in pieces, and nothing else":                            "must refuse with `ErrNotASpill`",
	"output/truncation never splits a character":                                                 "(cut\n  on UTF-8 boundaries)",
	"output/a spill stops at its cap and says so":                                                "Each file stops at `spillCapBytes` and then says so",
	"output/a background read returns at most the collection cap; the rest waits":                "what it cannot take waits for the next read",
	"output/background reads past the buffer are lossy; the spill keeps all":                     "makes the next read `Lossy`",
	"settings/defaults and caps come from the settings":                                          "**The common settings keys**",
	"settings/an unknown key is refused by name":                                                 "`Configure` refuses a key it does not know with\n  `ErrInvalidSettings` naming it",
	"settings/the credential allowlist lets a variable through":                                  "`credentialAllowlist`",
	"settings/scrubbing can be turned off":                                                       "`scrubCredentials` (true)",
	"termination/kill sends SIGTERM to the whole process group, not only the shell":              "a timeout or an abort sends SIGTERM to the group",
	"termination/what the shell leaves running is killed and counted":                            "`RunResult.LeftoversKilled` counts those processes",
	"termination/a lone escaped descendant is found too":                                         "after `setsid`, after a double fork",
	"termination/a command that leaves nothing running reports no leftovers":                     "a command that left\n  nothing reports 0",
	"termination/a timeout kills escaped descendants too":                                        "(in its group, after `setsid`, after a double fork) is killed",
	"termination/kill of a background process kills escaped descendants":                         "`Kill` ends the whole group",
	"termination/close kills what background processes left":                                     "`Close` kills and awaits everything, background processes and\n  what they left included",
	"interactive/what the executor does not offer is refused":                                    "what it does not offer is refused",
	"interactive/resolve checks a terminal's size, and Run refuses a terminal and an open stdin": "`Run` refuses a terminal and an open stdin",
	"interactive/a prompt on a terminal is answered through WriteInput":                          "A prompt on a terminal is answered through `WriteInput`",
	"interactive/an open stdin takes input until it is closed":                                   "takes input until it is closed",
	"interactive/a prompt on an open stdin is answered through WriteInput":                       "and so is a prompt on an open stdin",
	"interactive/a terminal job sees a terminal of its size, resized, as one stream":             "A terminal job sees a terminal of its size",
	"interactive/ctrl-c interrupts an interactive shell's command and the shell goes on":         "interrupts an interactive shell's command and the shell goes on",
	"interactive/waiting for input is reported for a read, not for a sleep":                      "Waiting for input is reported for a read, not for a sleep",
	"interactive/input to a finished process or one without input fails clearly":                 "Input to a finished process fails with `ErrInputClosed`",
	"interactive/kill of a terminal job leaves nothing running":                                  "Kill of a terminal job leaves nothing running",
}

func TestREADMEListsWhatTheSuiteChecks(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	// The README's list, its lines rejoined as they wrap.
	_, list, ok := strings.Cut(string(b), "## What an executor from scratch must provide\n")
	if !ok {
		t.Fatal("pluginapi/README.md has no list of what an executor from scratch must provide")
	}
	list, _, _ = strings.Cut(list, "\n## ")
	flat := strings.Join(strings.Fields(list), " ")
	seen := map[string]bool{}
	for _, c := range cases() {
		seen[c.name] = true
		says, ok := readmeSays[c.name]
		if !ok {
			t.Errorf("the suite checks %q, and pluginapi/README.md's list does not say so: add it there, and its words to readmeSays", c.name)
			continue
		}
		if !strings.Contains(flat, strings.Join(strings.Fields(says), " ")) {
			t.Errorf("the suite checks %q, and pluginapi/README.md's list of what an executor must provide does not say %q", c.name, says)
		}
	}
	// And what Serve does for a plugin: the host's spill directory.
	if !strings.Contains(flat, "`DSH_HOST_SPILL_DIR` (`pluginapi.HostSpillDirVar`)") {
		t.Errorf("pluginapi/README.md's list does not name pluginapi.HostSpillDirVar")
	}
	for name := range readmeSays {
		if !seen[name] {
			t.Errorf("readmeSays has %q, which is no case of the suite", name)
		}
	}
}
