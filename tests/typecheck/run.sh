#!/usr/bin/env bash
# Static typing as a user sees it: mypy --strict and basedpyright (pyright) on a user's script,
# from outside the repository root so that runetensor is found as the installed (editable) package.
# type_errors.py must be rejected, at each of its deliberate errors.
set -euo pipefail
cd "$(dirname "$0")"
MYPY="mypy --strict --no-incremental --cache-dir=/dev/null"
$MYPY user_script.py
basedpyright user_script.py
# every public name of every public module is visible to mypy (a script that reads them all)
names=$(mktemp -d)
trap 'rm -rf "$names"' EXIT
python - >"$names/all_names.py" <<'PY'
import importlib
mods = ["runetensor", "runetensor.nn", "runetensor.random", "runetensor.optim", "runetensor.io",
        "runetensor.datasets", "runetensor.metrics", "runetensor.progress",
        "runetensor.harpie", "runetensor.bigarray", "runetensor.bigarray.ext"]
# (runetensor.array_api is left out: its elementwise functions are made at import time, which
# a static checker cannot follow)
print("import runetensor")
for m in mods:
    print(f"import {m}")
for m in mods:
    mod = importlib.import_module(m)
    extra = [n for n in ("sum", "bool", "range", "slice", "int") if hasattr(mod, n)]
    for n in sorted(set(mod.__all__) | set(extra)):
        print(f"{m}.{n}")
print("runetensor.Tensor.T, runetensor.Tensor.sum, runetensor.Tensor.__getitem__")
PY
(cd "$names" && mypy --no-incremental --cache-dir=/dev/null --disable-error-code=misc all_names.py)
fail=0
out=$($MYPY type_errors.py 2>&1) && { echo "mypy accepted type_errors.py"; fail=1; }
for line in 6 7 8 9 10; do
    grep -q "type_errors.py:$line: error" <<<"$out" || { echo "mypy missed type_errors.py:$line"; fail=1; }
done
out=$(basedpyright type_errors.py 2>&1) && { echo "basedpyright accepted type_errors.py"; fail=1; }
for line in 6 7 8 9 10; do
    grep -q "type_errors.py:$line:[0-9]* - error" <<<"$out" || { echo "basedpyright missed type_errors.py:$line"; fail=1; }
done
[ "$fail" = 0 ] && echo "type checks: ok (type_errors.py rejected by both checkers)"
exit "$fail"
