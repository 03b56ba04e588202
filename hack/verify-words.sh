#!/usr/bin/env bash
# verify-words.sh — fail when user-facing text speaks of how the product was built instead of
# the product: internal issue and proposal numbers, design-document ids, work rounds and sessions,
# run ids, commit hashes, the machine a measurement was taken on. Prints file:line: [pattern]
# match for every hit, a count per top-level folder, and exits 1 when there is any.
#
# Checked (tracked and new, not ignored, files that exist in the working tree):
#   - README.md, Makefile, docs/, config/ and charts/statusfold/ (values, schema, Chart.yaml,
#     templates), except the generated copies: charts/statusfold/crds/, charts/statusfold/files/,
#     config/crd/ and config/rbac/role.yaml (they follow the Go types and markers, which are
#     checked, and `make verify` keeps them in step);
#   - every Go file but zz_generated*, test files included. Every pattern but the test-name one
#     needs a space inside the match, which Go code outside comments and string literals cannot
#     hold, so on Go files they find comments, string literals (subtest names included) only.
#
# A line containing "verify-words: allow" is skipped. Keep that for quotations of someone
# else's words (an upstream issue, say); product terms such as "round trip", "rounding",
# "round-robin" or `--seed 100` are not matched in the first place.
#
# Uses only bash, git and GNU grep.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"

# Each pattern: name, scope (all | docs | go), grep flags (i: case-insensitive), the extended
# regular expression, and an optional regular expression that discards a match it finds in it.
#   issue          "issue 15", "issues 8 and 15", "issue #12" (not "Issuer": a space or # must follow)
#   seed-doc       "seed 003", not the --seed flag ("--seed 100"); "the seed docs"/"seed documents"
#   proposal       "proposal 001"
#   nth-round      "eleventh round", "3rd round", "second and third rounds"; not "first round trip"
#   round-n        "round 7"
#   session        "session 16", "same session", "this session", "previous session"
#   run-id         "run id", "run ids"
#   this-machine   "this machine"
#   not-run-here   "not run here"
#   task-asked     "the task asked"
#   run-name       docs only: a lone m1, k3, p1, i2, j3 (the names given to measurement runs);
#                  case-sensitive, so "k8s", "p99", "v1", "wec1" do not match
#   commit-hash    docs only: 7–12 hex digits alone in backticks, `b9a69fa` (not a plain number)
#   test-name      Go only: a Test/Benchmark/Fuzz/Example name carrying an issue, seed,
#                  proposal, round or session number (TestIssue15Latency)
names=() scopes=() flags=() res=() excludes=()
pattern() { names+=("$1") scopes+=("$2") flags+=("$3") res+=("$4") excludes+=("${5:-}"); }
pattern issue all i '\bissues? #?[0-9]+'
pattern seed-doc all i '(^|[^-])\bseed [0-9]{3}\b|\bseed (docs?|documents?)\b'
pattern proposal all i '\bproposals? #?[0-9]{3}\b'
pattern nth-round all i '\b(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|thirteenth|[0-9]+(st|nd|rd|th)) rounds?([ -]trips?)?\b' 'trips?$'
pattern round-n all i '\brounds? [0-9]+\b'
pattern session all i '\bsessions? [0-9]+\b|\b(this|same|previous|last|next) session\b'
pattern run-id all i '\brun ids?\b'
pattern this-machine all i '\bthis machine\b'
pattern not-run-here all i '\bnot run here\b'
pattern task-asked all i '\bthe task asked\b'
pattern run-name docs '' '\b[mkpij][0-9]\b'
pattern commit-hash docs '' '`[0-9a-f]{7,12}`' '^`[0-9]+`$'
pattern test-name go '' '\b(Test|Benchmark|Fuzz|Example)[A-Za-z0-9_]*(Issue|Seed|Proposal|Round|Session)_?[0-9]+'

exists() { while IFS= read -r f; do [ -f "$f" ] && printf '%s\n' "$f"; done; }
list() { git ls-files --cached --others --exclude-standard -- "$@" | sort -u | exists; }

mapfile -t text_files < <(list README.md Makefile docs config charts/statusfold |
	grep -Ev '^(charts/statusfold/crds/|charts/statusfold/files/|config/crd/|config/rbac/role\.yaml$)')
mapfile -t doc_files < <(list README.md 'docs/*.md')
mapfile -t go_files < <(list '*.go' | grep -Ev '(^|/)zz_generated[^/]*$')

hits=$(mktemp)
trap 'rm -f "$hits"' EXIT

for i in "${!names[@]}"; do
	name=${names[i]} scope=${scopes[i]} re=${res[i]} exclude=${excludes[i]}
	case $scope in
	all) files=("${text_files[@]}" "${go_files[@]}") ;;
	docs) files=("${doc_files[@]}") ;;
	go) files=("${go_files[@]}") ;;
	esac
	[ ${#files[@]} -gt 0 ] || continue
	gflags=(-E)
	[ "${flags[i]}" = i ] && gflags+=(-i)
	{ grep -HnI "${gflags[@]}" -- "$re" "${files[@]}" || true; } | { grep -v 'verify-words: allow' || true; } |
		while IFS= read -r line; do
			file=${line%%:*}
			rest=${line#*:}
			num=${rest%%:*}
			text=${rest#*:}
			while IFS= read -r m; do
				[ -n "$m" ] || continue
				if [ -n "$exclude" ] && printf '%s\n' "$m" | grep -qE "${gflags[@]:1}" -- "$exclude"; then
					continue
				fi
				m=${m#[^A-Za-z0-9\`#]} # the character before "seed" that the seed pattern takes
				printf '%s:%s: [%s] %s\n' "$file" "$num" "$name" "$m"
			done < <(printf '%s\n' "$text" | grep -o "${gflags[@]}" -- "$re" || true)
		done >>"$hits"
done

if [ ! -s "$hits" ]; then
	echo "verify-words: no process words in docs, chart, config, Makefile or Go comments"
	exit 0
fi
sort -t: -k1,1 -k2,2n "$hits"
echo
echo "verify-words: $(wc -l <"$hits") hits (rewrite them in product terms; see hack/verify-words.sh):"
cut -d: -f1 "$hits" | awk -F/ '{ d = (NF > 1) ? $1 "/" : $1; n[d]++ } END { for (d in n) printf "  %5d %s\n", n[d], d }' | sort -k2
exit 1
