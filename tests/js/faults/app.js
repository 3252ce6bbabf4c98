// A JavaScript test tool whose faults the helper must turn into answers: a
// bug in `call` (an internal error with its stack), a thrown non-error, a
// classification that throws (answered false), console output (the host's
// log), a session value over the limit (a tool error). It declares
// `reuseInstance` and counts its calls in module state, so the tests can see
// which calls shared an instance (against the contract's advice: that is
// the point).

import { define, ToolError } from "./toolhost.js";

let calls = 0;

function divide(a, b) {
  return a.value / b.value;
}

export const tool = define({
  name: "JsFaults",
  description: "Misbehaves on request.",
  reuseInstance: true,
  inputSchema: {
    type: "object",
    properties: { do: { enum: ["bug", "throw-string", "console", "tool-error", "too-large", "ok", "count", "spin"] } },
    required: ["do"],
  },
  isConcurrencySafe() {
    throw new Error("cannot tell");
  },
  call(input, ctx) {
    calls += 1;
    switch (input.do) {
      case "count":
        return `call ${calls} of this instance`;
      case "spin":
        for (;;) {}
      case "bug":
        return divide(1, undefined);
      case "throw-string":
        throw "not an Error";
      case "console":
        console.log("a line for the log from JsFaults", { n: 1 });
        console.error("an error line");
        return "logged";
      case "tool-error":
        throw new ToolError("the file is gone", "not-found");
      case "too-large":
        ctx.session.set("big", "x".repeat(70 * 1024));
        return "stored";
      default:
        return { fine: true };
    }
  },
});
