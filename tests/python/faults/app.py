"""A Python test tool whose faults the helper must turn into answers: an
exception in `call` (an internal error with its traceback), a classification
that raises (answered False), output written with print (the host's log).
It keeps no instance between calls (no `reuse_instance`), and counts its
calls in module state: every call must see a count of 1."""

import toolhost


# Calls this instance served: more than one if an instance served two calls.
SERVED = 0


def divide(a, b):
    return a / b


class PyFaults(toolhost.Tool):
    name = "PyFaults"
    description = "Misbehaves on request."
    input_schema = {
        "type": "object",
        "properties": {"do": {"enum": ["raise", "print", "tool-error", "ok", "count"]}},
        "required": ["do"],
    }

    def is_concurrency_safe(self, input):
        raise RuntimeError("cannot tell")

    def call(self, input, ctx):
        global SERVED
        SERVED += 1
        what = input["do"]
        if what == "count":
            return f"served {SERVED}"
        if what == "raise":
            return divide(1, 0)
        if what == "print":
            print("a line for the log from PyFaults")
            print("unfinished", end="")
            return "printed"
        if what == "tool-error":
            raise toolhost.ToolError("the file is gone", "not-found")
        return {"fine": True}


Tool = toolhost.export(PyFaults)
