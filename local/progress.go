package local

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// Progress shows that a long wait is going on: on a terminal a spinner with the elapsed time,
// otherwise one line at the start and one every 15 seconds. The returned func ends it and prints
// the outcome with the total time.
func Progress(out io.Writer, what string) (done func(ok bool)) {
	if out == nil || out == io.Discard {
		return func(bool) {}
	}
	start := time.Now()
	tty := isTerminal(out)
	stopCh := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	if !tty {
		fmt.Fprintf(out, "… %s\n", what)
	}
	wg.Go(func() {
		frames := []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}
		interval := 15 * time.Second
		if tty {
			interval = 100 * time.Millisecond
		}
		t := time.NewTicker(interval)
		defer t.Stop()
		for i := 0; ; i++ {
			select {
			case <-stopCh:
				return
			case <-t.C:
			}
			elapsed := time.Since(start).Round(time.Second)
			mu.Lock()
			if tty {
				fmt.Fprintf(out, "\r%s %s (%s) ", frames[i%len(frames)], what, elapsed)
			} else {
				fmt.Fprintf(out, "… still %s (%s)\n", what, elapsed)
			}
			mu.Unlock()
		}
	})
	var once sync.Once
	return func(ok bool) {
		once.Do(func() {
			close(stopCh)
			wg.Wait()
			mark := "✓"
			if !ok {
				mark = "✗"
			}
			prefix := ""
			if tty {
				prefix = "\r\033[K"
			}
			fmt.Fprintf(out, "%s%s %s (%s)\n", prefix, mark, what, time.Since(start).Round(100*time.Millisecond))
		})
	}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
