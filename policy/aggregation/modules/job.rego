# Aggregation of batch/v1 Job status across WECs.
# Argo CD reads conditions by presence, not status: a Failed entry → Degraded, else a Complete entry
# → Healthy, else Progressing. So Complete appears only when every WEC completed, Failed when any
# WEC failed, never as an Unknown entry. Counters: succeeded is the minimum (seed rule); failed and
# active take the maximum (more is worse / more work left).
#
# The aggregate is written to the WDS Job's status subresource, so `finalize` makes it satisfy the
# apiserver's Job status rules (pkg/apis/batch/validation validateJobStatus), whatever mix the WECs
# reported: Failed=True wins over Complete/SuccessCriteriaMet=True (both dropped), Complete=True
# drops FailureTarget=True; Failed=True comes with FailureTarget=True and Complete=True with
# SuccessCriteriaMet=True (added from the Failed/Complete entry when missing); completionTime only
# with Complete=True, never before startTime; a finished Job has a startTime, no active, ready or
# terminating pods and no uncounted terminated pods; ready never exceeds active.
package statusfold.builtin.job

combine := {
	"active": "count_max",
	"ready": "count_min",
	"succeeded": "count_min",
	"failed": "count_max",
	"terminating": "count_max",
	"startTime": "earliest",
	"completionTime": "latest",
	"conditions": {
		"op": "conditions",
		"negative": ["FailureTarget"],
		"presence": {"Complete": "all", "SuccessCriteriaMet": "all", "Failed": "any"},
	},
}

_st := input.status

_conds := object.get(_st, "conditions", [])

_true(typ) := cs[0] if {
	cs := [c | some c in _conds; c.type == typ; c.status == "True"]
	count(cs) > 0
}

_failed if _true("Failed")

_complete if {
	_true("Complete")
	not _failed
}

# about to fail: SuccessCriteriaMet=True cannot stand next to it
_failing if _failed

_failing if {
	_true("FailureTarget")
	not _complete
}

_finished if _failed

_finished if _complete

_drop(c) if {
	_failing
	c.type in {"Complete", "SuccessCriteriaMet"}
	c.status == "True"
}

_drop(c) if {
	_complete
	c.type == "FailureTarget"
	c.status == "True"
}

# entries replaced by an added True entry
_drop(c) if {
	_failed
	not _true("FailureTarget")
	c.type == "FailureTarget"
}

_drop(c) if {
	_complete
	not _true("SuccessCriteriaMet")
	c.type == "SuccessCriteriaMet"
}

_added contains object.union(_true("Failed"), {"type": "FailureTarget"}) if {
	_failed
	not _true("FailureTarget")
}

_added contains object.union(_true("Complete"), {"type": "SuccessCriteriaMet"}) if {
	_complete
	not _true("SuccessCriteriaMet")
}

_conditions := array.concat([c | some c in _conds; not _drop(c)], [c | some c in _added])

# times of the terminal conditions: a finished Job's startTime falls back to the earliest of these
_terminal_times contains t if {
	_finished
	some c in _conds
	c.type in {"Complete", "Failed"}
	c.status == "True"
	t := c.lastTransitionTime
	is_string(t)
	t != ""
}

_terminal_times contains _st.completionTime if {
	_complete
	_has("completionTime")
}

_has(k) if is_string(_st[k])

_start := _st.startTime if _has("startTime")

_start := min(_terminal_times) if {
	not _has("startTime")
	count(_terminal_times) > 0
}

# completionTime: the latest WEC's (the Complete entry's time when no WEC has one), never before startTime
_ct := _st.completionTime if {
	_complete
	_has("completionTime")
}

_ct := _true("Complete").lastTransitionTime if {
	_complete
	not _has("completionTime")
	is_string(_true("Complete").lastTransitionTime)
}

_completion := max({_ct, _start}) if {
	_ct
	_start
}

_completion := _ct if {
	_ct
	not _start
}

_completion := _start if {
	_complete
	not _ct
	_start
}

_zeroed := {k: 0 | some k in ["active", "ready", "terminating"]; _finished; k in object.keys(_st)}

_ready := {"ready": min([_st.ready, object.get(_st, "active", 0)])} if {
	not _finished
	is_number(_st.ready)
}

_times := object.union(
	{"startTime": _start | _start},
	{"completionTime": _completion | _completion},
)

finalize := object.union_n([
	object.remove(_st, {"conditions", "startTime", "completionTime", "uncountedTerminatedPods"}),
	{"conditions": _conditions | "conditions" in object.keys(_st)},
	_times,
	_zeroed,
	{"uncountedTerminatedPods": _st.uncountedTerminatedPods | not _finished; "uncountedTerminatedPods" in object.keys(_st)},
	{"ready": _ready.ready | _ready},
])
