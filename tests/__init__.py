"""The factory test suite (a regular package, so site-packages `tests` folders shipped by verl/openrlhf wheels
cannot shadow it)."""
