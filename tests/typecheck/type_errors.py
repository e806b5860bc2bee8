"""Deliberate type errors: the CI step asserts that each checker reports them (a checker that
sees nothing here is not reading the stubs)."""
import runetensor as rt

t = rt.zeros(rt.float32, [2, 3])
n: int = t.shape          # error: tuple[int, ...] is not int
s: str = t + 1            # error: Tensor is not str
rt.reshape(t, "3, 2")     # error: str is not Sequence[int]... (a str is one, so also:)
rt.no_such_function(t)    # error: runetensor has no attribute no_such_function
t.no_such_method()        # error: Tensor has no attribute no_such_method
