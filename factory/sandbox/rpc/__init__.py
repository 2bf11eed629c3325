"""RPC between the judge (test code; trusted) and the candidate (the program; untrusted).

The judge never runs candidate code and the candidate never sees a test: the judge calls the program's functions through
:class:`RemoteRef` proxies, and only plain data crosses the pipe (the tagged JSON of :mod:`.serialize`, plus RPC tags):

* ``{"$h": [n, what, extra]}`` -- a handle to an object that stays in the candidate (a function, class, module,
  generator, instance...).  In the judge it is a :class:`RemoteRef`: calls and attribute reads are forwarded (their
  results cross as data), ``==`` is identity and ``hash`` is ``id``.  No other operator is ever answered by the
  program's object: ``len``, ``in``, ``[]``, iteration, ``str`` and ``repr`` are computed by the judge on the object's
  *plain value*, one snapshot the candidate sends as data (a mapping's items, an iterable's items; taken again only
  after the program ran in between), so an object cannot say ``len`` 3, contain everything and index to anything at
  once.  An object with no plain value (not iterable) supports none of them; an iterator or generator is a stream:
  ``next`` yields its items as data.  A module handle becomes the judge's *own* import of that module; a class deriving
  from ``BaseException`` becomes a local exception class of the same name, so ``pytest.raises(ProgramError)`` and
  ``except ValueError`` work.
* ``{"$r": k}`` -- entry ``k`` of the message's object table ``objs`` (``[class name, attributes]``): instances of
  classes both sides define (LeetCode's ``ListNode``/``TreeNode`` from the preamble) cross structurally, as a graph
  (cycles and 10^5-long linked lists are fine).  The receiver rebuilds them with its *own* class of that name; the
  judge's classes come from the preamble and test code only.
* In-place mutation of list/dict/set/bytearray arguments, of numpy arrays and collections values (deque, Counter,
  OrderedDict, defaultdict) and of structural objects is copied back to the judge after a call
  (``sort_in_place(a); assert a == [...]`` works).

Frames are a 4-byte length plus UTF-8 JSON; every frame from the candidate is size-capped and decoded with depth errors
caught, so no bytes a program writes can crash the judge.
"""
from .codec import (JUDGE_MODULE, PROGRAM_DRIVEN_IMPORTS, PROGRAM_MODULE, CandidateExit, CandidateGone, Codec,
                    FrameTooLarge, decode, dumps, exception_info, loads, read_frame, write_frame)
from .program_side import Server, plain_value, serve
from .proxy import CandidateProtocolError, Client, JudgeNamespace, OutputTooLarge, RemoteRef

__all__ = ["Client", "Server", "RemoteRef", "JudgeNamespace", "CandidateGone", "CandidateExit", "serve", "write_frame",
           "read_frame", "dumps", "loads", "exception_info", "Codec", "decode", "OutputTooLarge",
           "CandidateProtocolError", "JUDGE_MODULE", "PROGRAM_MODULE", "PROGRAM_DRIVEN_IMPORTS", "FrameTooLarge",
           "plain_value"]
