package localexec

import (
	"regexp"
	"strings"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// denial matches what a sandbox's refusal looks like in a command's
// output: Landlock refuses with EACCES (EXDEV for a rename or link across
// its rules), seccomp with EPERM, a read-only mount with EROFS, a network
// namespace without a network with ENETUNREACH or a failed name lookup.
var denial = regexp.MustCompile(`(?i)permission denied|operation not permitted|read-only file system|invalid cross-device link|network is unreachable|temporary failure in name resolution`)

// offlineDenial matches, besides denial, how a failed name lookup or
// connection reads in tools' output: for a command that ran without a
// network they are the sandbox's refusal. curl's "Could not resolve host"
// and "Couldn't connect to server", glibc's "Name or service not known",
// Node's EAI_AGAIN (npm), and the retry warnings of pip (urllib3's
// "Retrying (Retry(...)) after connection broken by ...").
var offlineDenial = regexp.MustCompile(denial.String() +
	`|could not resolve host|couldn't connect to server|name or service not known|no address associated with hostname` +
	`|\bEAI_AGAIN\b|\bENOTFOUND\b|failed to establish a new connection|retrying \(retry\(.*\) after connection broken`)

// protectedBusy matches how a refusal at a protected path reads besides
// EROFS: its mount cannot be moved or removed (EBUSY), and a missing
// one's placeholder is a directory (EISDIR).
var protectedBusy = regexp.MustCompile(`(?i)device or resource busy|is a directory`)

// protectedRefusal says whether line is a refusal that names one of the
// result's protected paths.
func protectedRefusal(res pluginapi.RunResult, line string) bool {
	return res.Sandbox != nil && len(res.Sandbox.ProtectedPaths) > 0 && protectedBusy.MatchString(line) &&
		len(pluginapi.ProtectedNamed(line, res.Sandbox.ProtectedPaths)) > 0
}

// maxEvidence bounds the evidence lines of a likely denial, and their
// length.
const (
	maxEvidence     = 5
	maxEvidenceLine = 240
)

// DenialEvidence is the lines of res's output (stderr first) that look
// like a sandbox refused something: at most five, each cut to 240 bytes.
// A sandboxing executor reports them as its result's evidence.
func DenialEvidence(res pluginapi.RunResult) []string { return denialEvidence(res, denial) }

// OfflineEnv keeps package managers from retrying a network a command
// without one cannot reach: npm fails at once, and pip gives up after one
// retry, whose warning line is the evidence of the denial (with none it
// says nothing of the network at all). A sandboxing executor adds it to a
// command's environment where it has no network.
var OfflineEnv = map[string]string{"PIP_RETRIES": "1", "npm_config_fetch_retries": "0"}

// OfflineDenialEvidence is DenialEvidence for a command that ran without a
// network: a failed name lookup or connection is evidence too.
func OfflineDenialEvidence(res pluginapi.RunResult) []string {
	return denialEvidence(res, offlineDenial)
}

func denialEvidence(res pluginapi.RunResult, denial *regexp.Regexp) []string {
	var evidence []string
	for _, text := range []string{res.Stderr.Text, res.Stdout.Text} {
		for _, line := range strings.Split(text, "\n") {
			if len(evidence) == maxEvidence {
				return evidence
			}
			if denial.MatchString(line) || protectedRefusal(res, line) {
				if len(line) > maxEvidenceLine {
					line = strings.ToValidUTF8(line[:maxEvidenceLine], "") + "…"
				}
				evidence = append(evidence, line)
			}
		}
	}
	return evidence
}
