package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// parseFlags parses a command's args into fs. It returns ok when the
// command should go on; otherwise status is how it ends: 0 after printing
// the command's help on stdout (-h, --help), 2 after a usage error.
func parseFlags(fs *flag.FlagSet, args []string) (status int, ok bool) {
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		printHelp(os.Stdout, fs)
		return 0, false
	case err != nil:
		return usageError("%s", flagProblem(err)), false
	}
	return 0, true
}

// usageError says what was wrong with the command line, in one line, and
// where its usage is; it returns the usage status, 2.
func usageError(format string, args ...any) int {
	fmt.Fprintf(os.Stderr, "%s: %s\n", commandName, fmt.Sprintf(format, args...))
	fmt.Fprintln(os.Stderr, usageHint())
	return exitUsage
}

// usageHint names the help of the running command.
func usageHint() string {
	if sub, ok := strings.CutPrefix(commandName, "dsh-host "); ok {
		if _, known := helps[sub]; known {
			return "Run 'dsh-host help " + sub + "' for its usage."
		}
	}
	return "Run 'dsh-host help' for usage."
}

// The flag package's errors, read back so they can be said with the flag
// as it is typed (--name) and the value as given.
var (
	invalidValue = regexp.MustCompile(`^invalid (?:boolean )?value (".*") for (?:flag )?-(\S+): (.*)$`)
	flagRef      = regexp.MustCompile(`: -(\S+)$`)
)

// flagProblem rewords an error of flag.FlagSet.Parse.
func flagProblem(err error) string {
	msg := err.Error()
	if m := invalidValue.FindStringSubmatch(msg); m != nil {
		value, uerr := strconv.Unquote(m[1])
		if uerr != nil {
			value = m[1]
		}
		problem := m[3]
		if problem == "parse error" {
			problem = "not a valid value"
		}
		return fmt.Sprintf("--%s %s: %s", m[2], value, problem)
	}
	switch {
	case strings.HasPrefix(msg, "flag provided but not defined: "):
		return "unknown flag " + flagRef.ReplaceAllString(": "+strings.TrimPrefix(msg, "flag provided but not defined: "), "--$1")
	case strings.HasPrefix(msg, "flag needs an argument: "):
		return flagRef.ReplaceAllString(": "+strings.TrimPrefix(msg, "flag needs an argument: "), "--$1") + " needs a value"
	}
	return msg
}

// durationFlag is a duration flag whose error says what a duration looks
// like: a bare number is hinted at a unit.
type durationFlag struct{ d *time.Duration }

func (f durationFlag) String() string {
	if f.d == nil || *f.d == 0 {
		return ""
	}
	return f.d.String()
}

func (f durationFlag) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err == nil {
		*f.d = d
		return nil
	}
	if _, nerr := strconv.ParseFloat(s, 64); nerr == nil {
		return fmt.Errorf("a duration needs a unit, as in %ss or %sms", s, s)
	}
	return errors.New("not a duration (such as 30s, 2m or 500ms)")
}
