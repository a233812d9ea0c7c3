# Sourced by the shell test scripts: counters and one result line per check.
# The script ends with: echo "$pass passed, $fail failed, $skip skipped".
pass=0 fail=0 skip=0

ok() { pass=$((pass + 1)); echo "ok   $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; }

# check NAME COMMAND...: one result, the command's output shown on failure.
check() {
	name=$1
	shift
	if out=$("$@" 2>&1); then
		ok "$name"
	else
		bad "$name"
		echo "$out" | tail -n 20 | sed 's/^/    /'
	fi
}
