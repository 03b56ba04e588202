# Shared helpers of the built-in modules: Argo CD's health order, worst last.
package statusfold.builtin.health

rank := {"Healthy": 0, "Suspended": 1, "Progressing": 2, "Missing": 3, "Degraded": 4, "Unknown": 5}

# status_of returns a WEC's reported status, or {} when it reported nothing.
status_of(wec) := s if {
	s := wec.status
	is_object(s)
} else := {}
