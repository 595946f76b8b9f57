package ssh

import "io"

// SetLogOutput sends the plugin's log to w until the returned func puts
// it back.
func SetLogOutput(w io.Writer) (restore func()) {
	logMu.Lock()
	defer logMu.Unlock()
	old := logOutput
	logOutput = w
	return func() {
		logMu.Lock()
		defer logMu.Unlock()
		logOutput = old
	}
}

// ReadPast is readPast, for its tests.
var ReadPast = readPast
