"""Reference implementations, not shipped with the package: the plain forms that the tests check
ours against and that `scripts/bench_*.py` time ours against (`make bench` runs from a checkout,
as the tests do), one copy for both."""
