# The files here are type-checked (tests/typecheck/run.sh), not collected: type_errors.py fails on
# purpose; user_script.py runs from tests/test_static_api.py.
collect_ignore = ["type_errors.py", "user_script.py"]
