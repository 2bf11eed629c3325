"""MBPP+ test inputs as the functions receive them in EvalPlus.

MbppPlus.jsonl stores inputs as JSON (no tuples, sets or complex numbers); EvalPlus restores them per task
(``mbpp_deserialize_inputs``), and so does :func:`mbppplus_args`, by the table below.
"""
from __future__ import annotations

from typing import Callable


def _deep_tuple(x):
    return tuple(_deep_tuple(e) for e in x) if isinstance(x, list) else x


def _set_or_empty(item):  # EvalPlus quirk kept as is: an empty list becomes {} (a dict), others a set
    return set(item) if isinstance(item, list) and len(item) else {}


_RULES: dict[str, tuple[set[int], Callable[[list], list]]] = {
    "each_arg_tuple": ({2, 116, 132, 143, 222, 261, 273, 394, 399, 421, 424, 429, 470, 560, 579, 596, 616, 630, 726,
                        740, 744, 809}, lambda a: [tuple(x) for x in a]),
    "each_arg_list_of_tuples": ({63, 64, 70, 94, 120, 237, 272, 299, 400, 409, 417, 438, 473, 614, 780},
                                lambda a: [[tuple(x) for x in arg] for arg in a]),
    "first_arg_list_of_tuples": ({75, 413, 444, 753}, lambda a: [[tuple(x) for x in a[0]], a[1]]),
    "second_arg_tuple": ({106, 750}, lambda a: [a[0], tuple(a[1])]),
    "first_arg_sets": ({115}, lambda a: [[_set_or_empty(x) for x in a[0]]]),
    "float_complex": ({124}, lambda a: [float(a[0]), complex(a[1])]),
    "first_arg_tuple": ({250, 405, 446, 617, 720, 763, 808}, lambda a: [tuple(a[0]), a[1]]),
    "each_arg_tuple_of_tuples": ({259, 401, 445}, lambda a: [tuple(tuple(x) for x in arg) for arg in a]),
    "first_arg_tuple_mixed": ({278}, lambda a: [tuple(tuple(x) if isinstance(x, list) else x for x in a[0])]),
    "first_arg_tuple_3": ({307}, lambda a: [tuple(a[0]), a[1], a[2]]),
    "dict_values_tuples": ({722}, lambda a: [{k: tuple(v) for k, v in a[0].items()}] + list(a[1:])),
    "complex_arg": ({252}, lambda a: [complex(a[0])]),
    "all_lists_tuples": ({580, 615, 791}, lambda a: list(_deep_tuple(a))),
}
_BY_TASK = {n: fn for ids, fn in _RULES.values() for n in ids}


def mbppplus_args(task_id: str, args: list) -> list:
    """The argument list ``Mbpp/<n>``'s function is called with, for one stored JSON input."""
    try:
        n = int(str(task_id).rsplit("/", 1)[-1])
    except ValueError:
        return args
    fn = _BY_TASK.get(n)
    return fn(args) if fn else args
