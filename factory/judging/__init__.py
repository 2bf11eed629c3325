"""How a problem is judged and how lake rows become sandbox jobs: the per-problem judging rule (checker, calibrated
time limit: `rules`) and program/test rows <-> sandbox Job / verdict rows (`jobs`)."""
